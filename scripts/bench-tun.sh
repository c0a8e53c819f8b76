#!/usr/bin/env bash
# Fidelity of the two real-time modes of `satquic link` against the simulator, and the
# emulator's own CPU cost (issue 11 part 4). Root (the TUN mode makes namespaces). Prints
# Markdown table rows; BENCHMARKS.md has the results.
#
#   scripts/bench-tun.sh fidelity [SATQUIC]   # time to 10 MiB on qir-sat, 100 MB on geo-viasat
#   scripts/bench-tun.sh cpu [SATQUIC]        # link CPU at 150 Mbit/s and 1 Gbit/s (UDP)
#
# Each download: `satquic server --cc CC --no-retry` and `satquic client -n SIZE --cc CC -J` (the
# client's completion_time_s: handshake start to the last byte), through
#   relay: satquic link --listen 127.0.0.1:4434 --to 127.0.0.1:4433 --link PRESET
#   tun:   satquic link --tun --link PRESET, server and client in the two namespaces
#   sim:   satquic sim --link PRESET --cc CC -n SIZE -J (virtual time, seed 1)
# CPU: a paced UDP sender at 95 % of the link rate for 5 s (in the relay mode to the relay,
# in the TUN mode from the server namespace to the client's), and the link process's user +
# system time (/proc/PID/stat) over that, as a share of one core.
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
    link_log=$log
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
    # --no-retry: the simulator's server validates no address, and a Retry costs the real
    # client one round trip (0.64 s on qir-sat) that the comparison would count as the
    # emulator's.
    "${ns_s[@]}" "$satquic" server --listen $listen --cc "$cc" --no-retry >/dev/null 2>&1 &
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

# A paced UDP sender (1372-byte payloads: 1400-byte IP packets) and a sink that counts
# what arrives: the same traffic for both modes, cheap enough to reach 1 Gbit/s here.
BLAST='
import socket, sys, time
dst, port, rate, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
data, gap = b"x" * 1372, 1400 * 8 / rate
t0 = time.perf_counter(); n = sent = 0
while True:
    now = time.perf_counter() - t0
    if now >= secs: break
    if now - n * gap > 0.0005:
        n = int(now / gap)  # behind (descheduled): skip, do not burst to catch up
    while n * gap <= now:
        try: s.sendto(data, (dst, port))
        except BlockingIOError: pass
        n += 1; sent += 1
print(sent)
'
SINK='
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
s.bind((sys.argv[1], int(sys.argv[2]))); s.settimeout(3)
n = 0
try:
    while True: s.recv(2048); n += 1
except socket.timeout: pass
print(n)
'

cpu() {
    echo "| mode | link (5 ms each way, 1 BDP queue) | offered | forwarded by the link | delivered to the sink | link delay error p50 / p99 | link CPU (share of one core) |"
    echo "|---|---|---|---|---|---|---|"
    for mode in relay tun; do
        start_link $mode --rate 1G --delay 5ms --queue 1bdp
        local b a
        b=$(cpu_ticks "$link_pid")
        sleep 5
        a=$(cpu_ticks "$link_pid")
        stop "$link_pid"
        python3 -c "print(f'| $mode | 1G, idle | - | - | - | - | {100 * ($a - $b) / $tick / 5:.0f} % |')"
    done
    for rate in 150M 1G; do
        local bps=150e6
        [ "$rate" = 1G ] && bps=1e9
        for mode in relay tun; do
            start_link $mode --rate $rate --delay 5ms --queue 1bdp
            local ns_s=() ns_c=() dst=127.0.0.1 port=4434 sink_addr=127.0.0.1 sink_port=4433 dir=up
            if [ "$mode" = tun ]; then
                dir=down
                ns_s=(ip netns exec $S)
                ns_c=(ip netns exec $C)
                dst=10.199.0.1 port=9000 sink_addr=10.199.0.1 sink_port=9000
            fi
            local sinkout
            sinkout=$(mktemp)
            "${ns_c[@]}" python3 -c "$SINK" $sink_addr $sink_port >"$sinkout" &
            local sink=$!
            sleep 0.3
            local before after t0 t1 sent
            before=$(cpu_ticks "$link_pid")
            t0=$(date +%s.%N)
            # 95 % of the link rate for 5 s.
            sent=$("${ns_s[@]}" python3 -c "$BLAST" $dst $port "$(python3 -c "print(0.95 * $bps)")" 5)
            t1=$(date +%s.%N)
            after=$(cpu_ticks "$link_pid")
            wait $sink
            stop "$link_pid"
            # "up: forwarded N packets, modelled drops D, delay error p50 X p99 Y"
            local line
            line=$(grep "^$dir: forwarded" "$link_log")
            python3 -c "
import re
m = re.match(r'\\w+: forwarded (\\d+) packets, modelled drops (\\d+), delay error p50 (\\S+) p99 (\\S+)', '''$line''')
fwd, drops, p50, p99 = int(m[1]), int(m[2]), m[3], m[4]
sent, got = $sent, $(cat "$sinkout")
wall = $t1 - $t0
cpu = ($after - $before) / $tick
mb = lambda n: n * 1400 * 8 / wall / 1e6
print(f'| $mode | $rate | {mb(sent):.0f} Mbit/s ({sent} packets) | {100 * fwd / max(sent, 1):.1f} % ({drops} modelled drops) | {100 * got / max(sent, 1):.1f} % | {p50} / {p99} | {100 * cpu / wall:.0f} % ({cpu:.2f} CPU-s over {wall:.1f} s) |')"
        done
    done
}

"$what"
