#!/usr/bin/env bash
# A profile-guided campaign binary (BENCHMARKS.md, "Simulator speed, side by side").
#
# Builds `satquic` with the campaign profile twice: once instrumented, which then runs a
# training set of simulations, and once optimised with the profile they recorded
# (rustc's -Cprofile-generate / -Cprofile-use, merged with llvm-profdata from rustup's
# llvm-tools component). The training set is a mix of links and controllers, not the
# benchmark run itself: GEO with and without BoD, LEO, LTE, the picoquic suite's upload
# link with bbr3 and the satellite profile, random loss. Simulation records do not
# change (the benchmark script compares them); only the speed does.
#
# usage: scripts/build-campaign-pgo.sh [OUT]    (default: target/campaign-pgo/satquic)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/campaign-pgo/satquic}

if ! rustup component list --installed 2>/dev/null | grep -q '^llvm-tools'; then
    rustup component add llvm-tools-preview
fi
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
[ -x "$profdata" ] || { echo "build-campaign-pgo: no llvm-profdata at $profdata" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

RUSTFLAGS="-Cprofile-generate=$work/raw" CARGO_TARGET_DIR=target/pgo-generate \
    cargo build --profile campaign --locked -p satquic
trainer=target/pgo-generate/campaign/satquic
while read -r args; do
    # shellcheck disable=SC2086 # the arguments are meant to be split
    "$trainer" sim $args --jobs 1 -J > /dev/null
done <<'TRAINING'
--link geo-viasat --cc cubic+search -n 50M
--link geo-viasat-bod --cc newreno -n 30M
--link leo --cc cubic+search -n 20M
--link lte --cc cubic+hystart++ -n 20M
--link qir-satloss --cc cubic -n 2M --runs 2
--link sat-250-3 --cc bbr3 -n 30M -R
--link sat-250-3 --cc satellite -n 30M -R --resume
TRAINING
"$profdata" merge -o "$work/merged.profdata" "$work/raw"

RUSTFLAGS="-Cprofile-use=$work/merged.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
    CARGO_TARGET_DIR=target/pgo-use cargo build --profile campaign --locked -p satquic
mkdir -p "$(dirname "$out")"
cp target/pgo-use/campaign/satquic "$out"
echo "build-campaign-pgo: $out"
