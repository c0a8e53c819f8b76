#!/usr/bin/env bash
# Builds the seeds' own measurement code, qperf on quicly's SEARCH fork (seed 000:
# github.com/AmberCronin/qperf, its quicly submodule github.com/AmberCronin/quicly and
# quicly's picotls and klib at the commits qperf pins), outside this repository, and
# installs it as $SATQUIC_PEERS/bin/qperf-quicly for `satquic matrix --adapters
# peers/quicly-qperf.toml` (docs/matrix-and-peers.md, "The seeds' own code through the same link").
#
#   scripts/build-qperf.sh [SOURCES] [WORKDIR]
#
# SOURCES: where the four repositories are cloned from, as SOURCES/OWNER/NAME (default
# https://github.com), or a directory of local clones laid out as SOURCES/OWNER+NAME/repo.
# WORKDIR: build directory (default ~/.cache/satquic-qperf). Needs cmake, a C compiler,
# libev and OpenSSL headers (Debian: cmake build-essential libev-dev libssl-dev).
set -euo pipefail

sources=${1:-https://github.com}
work=${2:-$HOME/.cache/satquic-qperf}
peers=${SATQUIC_PEERS:-$HOME/.local/satquic-peers}

repo_url() { # OWNER NAME
    if [ -d "$sources/$1+$2/repo" ]; then
        echo "$sources/$1+$2/repo"
    else
        echo "$sources/$1/$2"
    fi
}

# Clones OWNER/NAME into DIR at COMMIT (HEAD when empty).
clone_at() { # OWNER NAME DIR COMMIT
    rm -rf "$3"
    git clone -q "$(repo_url "$1" "$2")" "$3"
    if [ -n "$4" ]; then
        git -C "$3" checkout -q "$4"
    fi
}

# The commit a checkout pins for a submodule path.
pinned() { # DIR PATH
    git -C "$1" ls-tree HEAD "$2" | awk '{print $3}'
}

for tool in git cmake make cc; do
    command -v "$tool" >/dev/null || { echo "build-qperf: $tool is missing" >&2; exit 2; }
done

mkdir -p "$work"
src=$work/qperf
clone_at AmberCronin qperf "$src" ""
quicly=$src/extern/quicly
clone_at AmberCronin quicly "$quicly" "$(pinned "$src" extern/quicly)"
clone_at h2o picotls "$quicly/deps/picotls" "$(pinned "$quicly" deps/picotls)"
clone_at attractivechaos klib "$quicly/deps/klib" "$(pinned "$quicly" deps/klib)"
# quicly's CMake file lists its unit-test harness (picotest), which qperf does not use.
mkdir -p "$quicly/deps/picotest"
touch "$quicly/deps/picotest/picotest.c" "$quicly/deps/picotest/picotest.h"

cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
    { tail -20 "$work/cmake.log" >&2; exit 1; }
make -C "$work/build" -j"$(nproc)" qperf >"$work/build.log" 2>&1 ||
    { tail -20 "$work/build.log" >&2; exit 1; }
install -D "$work/build/qperf" "$peers/bin/qperf-quicly"
echo "$peers/bin/qperf-quicly"
