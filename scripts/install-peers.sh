#!/usr/bin/env bash
# Installs the QUIC implementations `satquic matrix` runs (peers/adapters.toml), from the
# package registries only: Debian's packages, PyPI, the Go module proxy and crates.io.
# Idempotent: what is installed and up to date is left alone. Run as root (or with
# passwordless sudo) on Debian.
#
#   scripts/install-peers.sh                 # all of them
#   scripts/install-peers.sh aioquic ngtcp2  # only these
#
# Implementations: ngtcp2 (Debian ngtcp2-server, ngtcp2-client), aioquic (PyPI, with our
# peers/aioquic/ scripts), quic-go (our peers/quic-go/ on the quic-go module), quiche
# (our peers/quiche/ on the quiche crate; builds BoringSSL: cmake, libclang, a few
# minutes), caddy (Debian; an HTTP/3 server on quic-go), tcp (Debian's iperf3 and
# iproute2, for the kernel TCP rows run through `satquic link --tun`, which also need
# root and /dev/net/tun). satquic itself needs nothing.
#
# Built programs and scripts go to $SATQUIC_PEERS (default ~/.local/satquic-peers), where
# the adapters look for them. Ends with one line per implementation; exits 1 if any
# failed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
prefix=${SATQUIC_PEERS:-$HOME/.local/satquic-peers}
mkdir -p "$prefix/bin"

all=(ngtcp2 aioquic quic-go quiche caddy tcp)
if [ $# -gt 0 ]; then wanted=("$@"); else wanted=("${all[@]}"); fi
for w in "${wanted[@]}"; do
    case " ${all[*]} " in
    *" $w "*) ;;
    *) echo "install-peers: unknown implementation $w (known: ${all[*]})" >&2; exit 2 ;;
    esac
done

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}
apt_updated=
apt_install() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ -z "$apt_updated" ]; then
        as_root apt-get update -qq || return 1
        apt_updated=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
# Debian starts packaged servers as services where systemd runs; the matrix starts its
# own, on ports of its choosing.
no_service() {
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        as_root systemctl disable --now "$1" >/dev/null 2>&1 || true
    fi
}
# A stamp of the sources a build came from: rebuild only when they changed.
stamp_of() { (cd "$repo" && cat "$@" | sha256sum | cut -c1-16); }

install_ngtcp2() {
    apt_install ngtcp2-client ngtcp2-server || return 1
    no_service ngtcp2d
    command -v gtlsserver >/dev/null && command -v gtlsclient >/dev/null
}

install_aioquic() {
    if ! python3 -c 'import aioquic' 2>/dev/null; then
        if python3 -m pip --version >/dev/null 2>&1; then
            local flags=(--quiet --disable-pip-version-check)
            # Debian's own python3 refuses installs beside its packages (PEP 668) unless told.
            if python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
                flags+=(--break-system-packages)
            fi
            PIP_ROOT_USER_ACTION=ignore python3 -m pip install "${flags[@]}" aioquic || return 1
        else
            apt_install python3-aioquic || return 1
        fi
    fi
    mkdir -p "$prefix/aioquic"
    install -m 0755 peers/aioquic/server.py peers/aioquic/client.py "$prefix/aioquic/"
    python3 -c 'import aioquic'
}

install_quic_go() {
    if ! command -v go >/dev/null 2>&1; then
        apt_install golang-go || return 1
    fi
    local stamp
    stamp=$(stamp_of peers/quic-go/go.mod peers/quic-go/go.sum peers/quic-go/main.go)
    if [ -x "$prefix/bin/quic-go-peer" ] && [ "$(cat "$prefix/bin/.quic-go-peer.stamp" 2>/dev/null)" = "$stamp" ]; then
        return 0
    fi
    # go.mod asks for the Go release quic-go needs; an older go fetches that toolchain
    # from the Go module proxy (GOTOOLCHAIN=auto, Go 1.21 and later).
    (cd peers/quic-go && GOFLAGS=-mod=mod go build -trimpath -o "$prefix/bin/quic-go-peer" .) || return 1
    echo "$stamp" >"$prefix/bin/.quic-go-peer.stamp"
}

install_quiche() {
    command -v cargo >/dev/null 2>&1 || { echo "install-peers: quiche needs cargo (rustup)" >&2; return 1; }
    apt_install cmake libclang-dev g++ || return 1
    local stamp
    stamp=$(stamp_of peers/quiche/Cargo.toml peers/quiche/Cargo.lock peers/quiche/src/main.rs)
    if [ -x "$prefix/bin/quiche-peer" ] && [ "$(cat "$prefix/bin/.quiche-peer.stamp" 2>/dev/null)" = "$stamp" ]; then
        return 0
    fi
    # Its own project and target directory (outside satquic's workspace), removed after
    # the build: BoringSSL's build tree is large.
    local target="$prefix/build/quiche"
    CARGO_TARGET_DIR="$target" cargo build --release --locked \
        --manifest-path peers/quiche/Cargo.toml || return 1
    install -m 0755 "$target/release/quiche-peer" "$prefix/bin/quiche-peer" || return 1
    rm -rf "$target"
    rmdir "$prefix/build" 2>/dev/null
    echo "$stamp" >"$prefix/bin/.quiche-peer.stamp"
}

install_caddy() {
    apt_install caddy || return 1
    no_service caddy
    command -v caddy >/dev/null
}

install_tcp() {
    apt_install iperf3 iproute2 || return 1
    no_service iperf3
    command -v iperf3 >/dev/null && command -v ip >/dev/null && command -v ss >/dev/null
}

failed=0
for w in "${wanted[@]}"; do
    if "install_${w//-/_}"; then
        echo "install-peers: $w ok"
    else
        echo "install-peers: $w FAILED" >&2
        failed=1
    fi
done
exit $failed
