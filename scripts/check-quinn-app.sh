#!/usr/bin/env bash
# The application outside the workspace (examples/quinn-app: registry quinn and quinn-proto,
# satquic-cc without the feature `patched-quinn`): builds it from its own lock file, then
# downloads 1 MiB through `satquic link --link qir-sat` (a 600 ms, 20 Mbit/s path) on
# loopback and checks from the server's event log that satquic-cc's controller ran: a
# slow-start exit, or the start-up jump (`+jump`: a window more than doubled, by at least
# 256 KiB, from one ACK batch to the next, where slow start adds what the batch acknowledged).
# Also checks that README.md's quinn section is the application's src/main.rs.
#
#   scripts/check-quinn-app.sh [SATQUIC_BINARY]   # default target/debug/satquic
set -euo pipefail
cd "$(dirname "$0")/.."
satquic=${1:-target/debug/satquic}
# README.md's quinn section is the application's program, to the byte.
python3 - <<'PY'
import sys
readme = open("README.md").read()
section = readme.split("## Using satquic-cc from a quinn application", 1)[1]
program = open("examples/quinn-app/src/main.rs").read()
if "```rust\n" + program + "```" not in section:
    sys.exit("README.md's quinn section is not examples/quinn-app/src/main.rs")
PY
# Its own target directory, whatever CARGO_TARGET_DIR says: the binary is run from there.
cargo build --locked --manifest-path examples/quinn-app/Cargo.toml --target-dir examples/quinn-app/target
app=examples/quinn-app/target/debug/quinn-app

dir=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
head -c 1048576 /dev/urandom >"$dir/file"
"$satquic" link --link qir-sat --listen 127.0.0.1:47534 --to 127.0.0.1:47533 --quiet \
    --duration 90s &
pids+=($!)
timeout 90 "$app" server 127.0.0.1:47533 "$dir/file" "$dir/cert.der" "$dir/events.log" &
server=$!
pids+=("$server")
for _ in $(seq 50); do [ -s "$dir/cert.der" ] && break; sleep 0.1; done
timeout 60 "$app" client 127.0.0.1:47534 "$dir/cert.der" "$dir/out"
wait "$server"
cmp "$dir/file" "$dir/out"
python3 - "$dir/events.log" <<'PY'
import re, sys
UNITS = {"s": 1.0, "ms": 1e-3, "\u00b5s": 1e-6, "us": 1e-6, "ns": 1e-9}
# A jump is the window more than doubling by at least 256 KiB within 60 ms, a tenth of
# qir-sat's round trip: slow start at most doubles per round trip. The profile's jump
# arrives over the few acknowledgements of one batch, so it is not one step.
WITHIN = 0.060
lines = open(sys.argv[1]).read().splitlines()
exits = [l for l in lines if l.startswith("SlowStartExit")]
samples = []
for l in lines:
    if m := re.match(r"Sample \{ at: ([0-9.]+)(s|ms|\u00b5s|us|ns), cwnd: (\d+)", l):
        samples.append((float(m.group(1)) * UNITS[m.group(2)], int(m.group(3))))
jumps = []
for i, (t0, a) in enumerate(samples):
    later = [b for t, b in samples[i + 1:] if t - t0 <= WITHIN]
    if later and (b := max(later)) > 2 * a and b - a >= 256 * 1024:
        jumps.append((a, b))
        break
if not exits and not jumps:
    sys.exit(f"quinn-app: no slow-start exit and no jump in {len(lines)} controller events")
print(f"quinn-app: {len(lines)} controller events, {len(exits)} slow-start exits, "
      f"jumps {jumps}")
PY
