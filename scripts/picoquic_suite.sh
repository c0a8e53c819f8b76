#!/usr/bin/env bash
# picoquic's satellite test suite (picoquictest/satellite_test.c) in satquic's simulator:
# one line per scenario and variant, "scenario variant completion_s lost exit_class".
# Usage: scripts/picoquic_suite.sh [path/to/satquic] [variant...]
set -euo pipefail
bin=${1:-target/release/satquic}
shift || true
variants=("$@")
[ ${#variants[@]} -eq 0 ] && variants=(cubic bbr satellite "bbr --ack-freq 16:25ms")
# name | link | bytes | extra flags
scenarios=(
  "basic|sat-250-3|100M|-R"
  "loss|sat-250-3:loss=64|100M|-R"
  "jitter|sat-250-3:jitter=3ms|100M|-R"
  "medium|sat-50-10|100M|-R"
  "preemptive_fc|sat-20-2:loss=64|10M|-R --rwnd 750K"
  "qir-sat|qir-sat|10MiB|"
  "qir-satloss|qir-satloss|10MiB|"
  "geo-viasat|geo-viasat|200M|"
)
for s in "${scenarios[@]}"; do
  IFS='|' read -r name link bytes extra <<<"$s"
  for v in "${variants[@]}"; do
    # Exit code 1 is a run that did not finish in 60 s: still a row ("-").
    # shellcheck disable=SC2086
    { "$bin" sim --link "$link" -n "$bytes" $extra --cc $v -t 60 -J || [ $? -eq 1 ]; } |
      python3 -c '
import json, sys
d = json.load(sys.stdin); r = d["per_run"][0]
t = r["completion_time_s"]
lost, cls = r["packets_lost"], r["exit_class"]
t = "-" if t is None else f"{t:.2f}"
print(f"{sys.argv[1]:14} {sys.argv[2]:26} {t:>6} {lost:>7} {cls}")
' "$name" "$v"
  done
done
