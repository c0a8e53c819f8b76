#!/usr/bin/env bash
# Fidelity of the two real-time modes of `satquic link` against the simulator, and the
# emulator's own CPU cost (issue 11 part 4). Root (the TUN mode makes namespaces). Prints
# Markdown table rows; BENCHMARKS.md has the results.
#
#   scripts/bench-tun.sh fidelity [SATQUIC]   # time to 10 MiB on qir-sat, 100 MB on geo-viasat
#   scripts/bench-tun.sh cpu [SATQUIC]        # link CPU at 150 Mbit/s and 1 Gbit/s
#
# Each download: `satquic server --cc CC` and `satquic client -n SIZE --cc CC -J` (the
# client's completion_time_s: handshake start to the last byte), through
#   relay: satquic link --listen 127.0.0.1:4434 --to 127.0.0.1:4433 --link PRESET
#   tun:   satquic link --tun --link PRESET, server and client in the two namespaces
#   sim:   satquic sim --link PRESET --cc CC -n SIZE -J (virtual time, seed 1)
# CPU: the link process's user + system time (/proc/PID/stat) over the client's transfer,
# as a share of one core.
set -euo pipefail
what=${1:-fidelity}
satquic=${2:-satquic}
C=satq-bench-c
S=satq-bench-s
tick=$(getconf CLK_TCK)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup EXIT

json_field() { python3 -c "import json,sys; v=json.load(sys.stdin); print(eval('v'+sys.argv[1]))" "$1"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# start_link MODE ARGS...: starts satquic link, waits until it is up; sets link_pid.
start_link() {
    local mode=$1
    shift
    local log
    log=$(mktemp)
    if [ "$mode" = tun ]; then
        "$satquic" link --tun --client-ns $C --server-ns $S -q "$@" >"$log" 2>&1 &
    else
        "$satquic" link --listen 127.0.0.1:4434 --to 127.0.0.1:4433 -q "$@" >"$log" 2>&1 &
    fi
    link_pid=$!
    pids+=("$link_pid")
    for _ in $(seq 100); do
        grep -q "^satquic link" "$log" && return 0
        sleep 0.05
    done
    echo "link did not start: $(cat "$log")" >&2
    exit 1
}

stop() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# download MODE CC SIZE: runs server and client; prints the client's JSON.
download() {
    local mode=$1 cc=$2 size=$3 ns_s=() ns_c=() addr=127.0.0.1:4434 listen=127.0.0.1:4433
    if [ "$mode" = tun ]; then
        ns_s=(ip netns exec $S)
        ns_c=(ip netns exec $C)
        addr=10.199.0.2:4433
        listen=10.199.0.2:4433
    fi
    "${ns_s[@]}" "$satquic" server --listen $listen --cc "$cc" >/dev/null 2>&1 &
    local server=$!
    sleep 0.3
    "${ns_c[@]}" "$satquic" client $addr -n "$size" --cc "$cc" --insecure -J
    stop $server
}

fidelity() {
    echo "| preset | size | cc | sim s | relay s | tun s | relay/sim | tun/sim |"
    echo "|---|---|---|---|---|---|---|---|"
    for case in "qir-sat 10MiB" "geo-viasat 100M"; do
        set -- $case
        local preset=$1 size=$2
        for cc in cubic satellite; do
            local sim relay tun
            sim=$("$satquic" sim --link "$preset" --cc "$cc" -n "$size" -J |
                json_field "['per_run'][0]['completion_time_s']" 2>/dev/null ||
                echo nan)
            start_link relay --link "$preset"
            relay=$(download relay "$cc" "$size" | json_field "['flows'][0]['completion_time_s']")
            stop "$link_pid"
            start_link tun --link "$preset"
            tun=$(download tun "$cc" "$size" | json_field "['flows'][0]['completion_time_s']")
            stop "$link_pid"
            python3 -c "
s, r, t = (float(x) for x in ('$sim', '$relay', '$tun'))
print(f'| $preset | $size | $cc | {s:.2f} | {r:.2f} | {t:.2f} | {r/s:.3f} | {t/s:.3f} |')"
        done
    done
}

cpu() {
    echo "| mode | link | transfer | goodput Mbit/s | link CPU (share of one core) |"
    echo "|---|---|---|---|---|"
    for rate in 150M 1G; do
        local size=300M
        [ "$rate" = 1G ] && size=1G
        for mode in relay tun; do
            start_link $mode --rate $rate --delay 5ms --queue 1bdp
            local before after t0 t1 out
            before=$(cpu_ticks "$link_pid")
            t0=$(date +%s.%N)
            out=$(download $mode cubic $size)
            t1=$(date +%s.%N)
            after=$(cpu_ticks "$link_pid")
            stop "$link_pid"
            python3 -c "
import json
v = json.loads('''$out''')
f = v['flows'][0]
wall = $t1 - $t0
cpu = ($after - $before) / $tick
print(f\"| $mode | $rate, 5 ms each way, 1 BDP queue | $size | {f['goodput_bps']/1e6:.0f} | {100*cpu/wall:.0f} % ({cpu:.2f} CPU-s over {wall:.1f} s) |\")"
        done
    done
}

"$what"
