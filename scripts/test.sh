#!/usr/bin/env bash
# The test command of README.md: installs what the tests need where it is missing, then
# runs every test of the workspace. Works on a fresh Debian machine with the Rust toolchain
# and Python (as root, or with passwordless sudo, for the packages and the tests that make
# network namespaces). `.ci/run` calls it after `cargo fmt --check` and clippy.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -p satquic-cc   # arguments go to `cargo test` (after --workspace --locked)
#
# What the tests need beyond Cargo: Slurm and munge for the job-array test
# (crates/cli/tests/slurm.rs starts them through scripts/slurm-local.sh), pandas and
# matplotlib for examples/analysis.py's test, aioquic for the matrix test, iperf3 for the
# kernel TCP test (crates/cli/tests/tun.rs, which also needs root and /dev/net/tun), Chromium
# for the scorecard's page (scripts/check-scorecard-html.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo -n "$@"; fi
}
apt_install() {
    local missing=()
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
apt_install slurm-wlm munge
# Headless Chromium for scorecard.html (scripts/check-scorecard-html.sh).
apt_install chromium
# aioquic and iperf3 through the script that installs every implementation `satquic
# matrix` runs; only the cheap ones here.
scripts/install-peers.sh aioquic tcp
if ! python3 -c 'import pandas, matplotlib' 2>/dev/null; then
    if python3 -m pip --version >/dev/null 2>&1; then
        pip_flags=(--quiet --disable-pip-version-check)
        # Debian's own python3 refuses installs beside its packages (PEP 668) unless told.
        if python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
            pip_flags+=(--break-system-packages)
        fi
        PIP_ROOT_USER_ACTION=ignore python3 -m pip install "${pip_flags[@]}" pandas matplotlib
    else
        # No pip: Debian's packages for Debian's python3.
        apt_install python3-pandas python3-matplotlib
    fi
    python3 -c 'import pandas, matplotlib'
fi

# The satellite grid's scripts (scripts/grid.py and its modules).
python3 -m unittest discover -s scripts -p 'test_*.py'
cargo test --workspace --locked "$@"
# satquic-cc without the feature `patched-quinn` (the workspace test above unifies it on):
# what an application on stock quinn-proto builds.
cargo test -p satquic-cc --locked
# That application, outside the workspace on the registry's quinn-proto: one download
# through `satquic link --link qir-sat` (the binary the tests just built).
scripts/check-quinn-app.sh target/debug/satquic
# scorecard.html drawn in a real browser, every regime's panel.
scripts/check-scorecard-html.sh target/debug/satquic
# The documents quote only commands, flags, files and headings that exist (the binary is
# the one the tests just built).
python3 scripts/check-doc-commands.py --bin target/debug/satquic
