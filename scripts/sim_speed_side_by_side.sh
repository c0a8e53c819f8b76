#!/usr/bin/env bash
# Simulator speed, old and new binaries side by side on one machine (BENCHMARKS.md,
# "Simulator speed, side by side"). Each variant is timed ROUNDS times, interleaved
# (variant 1, 2, ..., then again), and the minimum is kept: other work on the machine
# only ever adds time. Then the records of the base and the last variant are compared.
#
# usage: scripts/sim_speed_side_by_side.sh ROUNDS NAME=CMD[::EXTRA]...
#   NAME=CMD: a label and a command that runs `satquic` (may start with env assignments
#   such as LD_PRELOAD=...); EXTRA: arguments appended after SIM_ARGS. Example:
#   scripts/sim_speed_side_by_side.sh 5 base=/tmp/satquic-main \
#     "tls=target/campaign/satquic::--packet-cipher tls" null=target/campaign/satquic
# env: SIM_ARGS (default: the 200 MB GEO run), OUT (default: a temp directory),
#   RECORDS=1: afterwards, run each variant once more with `--out` and compare the whole
#   record directories with the first variant's (all files; `timing.json` and the
#   `wall_s` line of `sim.json` aside)
set -euo pipefail
rounds=${1:?rounds}; shift
sim_args=${SIM_ARGS:-"sim --link geo-viasat --cc cubic+search -n 200M --jobs 1 -J"}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
echo "variant,round,wall_s,user_s,sim_s" > "$out/times.csv"
# Splits a NAME=CMD[::EXTRA] argument into $name, $cmd and $extra.
split_spec() {
  name=${1%%=*}; cmd=${1#*=}; extra=""
  if [[ $cmd == *::* ]]; then extra=${cmd#*::}; cmd=${cmd%%::*}; fi
}
# Says whether WHAT of variant $name equals the first variant's (ASIDE: what the
# comparison leaves out); the rest is the command that compares them.
same_as_first() {
  local what=$1 aside=$2; shift 2
  if "$@" > /dev/null; then echo "$name: $what identical to $first's ($aside)"
  else echo "$name: $what DIFFERS from $first's"; fi
}
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    split_spec "$spec"
    # shellcheck disable=SC2086 # word splitting of the command and arguments is wanted
    /usr/bin/time -f "%e %U" -o "$out/time" env $cmd $sim_args $extra > "$out/$name.json"
    read -r wall user < "$out/time"
    sim=$(grep -m1 '"completion_time_s"' "$out/$name.json" | tr -dc '0-9.')
    echo "$name,$round,$wall,$user,$sim" >> "$out/times.csv"
  done
done
echo "variant  min wall s  min user s  sim s  sim/wall  sim/user"
for spec in "$@"; do
  split_spec "$spec"
  awk -F, -v n="$name" '$1==n { if (w==""||$3<w) w=$3; if (u==""||$4<u) u=$4; s=$5 }
    END { printf "%-8s %10.3f %11.3f %6.2f %8.1fx %8.1fx\n", n, w, u, s, s/w, s/u }' "$out/times.csv"
done
# The record, apart from wall-clock time, must not change.
first=${1%%=*}
for spec in "$@"; do
  split_spec "$spec"
  same_as_first "-J output" "wall_s aside" \
    diff <(grep -v wall_s "$out/$first.json") <(grep -v wall_s "$out/$name.json")
done
echo "times: $out/times.csv"
if [[ ${RECORDS:-0} == 1 ]]; then
  for spec in "$@"; do
    split_spec "$spec"
    rm -rf "$out/records-$name"
    # shellcheck disable=SC2086 # as above
    env $cmd $sim_args $extra --out "$out/records-$name" > /dev/null
  done
  for spec in "$@"; do
    split_spec "$spec"
    same_as_first "record directory" "timing aside" bash -c '
      diff -r -x timing.json -x sim.json "$1" "$2" &&
        diff <(grep -v wall_s "$1/sim.json") <(grep -v wall_s "$2/sim.json")' _ \
      "$out/records-$first" "$out/records-$name"
  done
fi
