#!/usr/bin/env bash
# fuzz-parsers.sh [CASES]: runs every parser's fuzz target (tests/parser_fuzz.rs of
# satquic-cc, satquic-link, satquic-lab and satquic-net: spec strings, link TOML,
# mahimahi traces, campaign specs, adapter files) for CASES inputs each (default
# 20000), release build. A failure is saved by proptest in that crate's
# tests/parser_fuzz.proptest-regressions and replayed first by every later run, the
# plain test suite included (issue 32 item 10). Exit status: cargo test's.
set -euo pipefail
cases=${1:-20000}
cd "$(dirname "$0")/.."
echo "fuzz-parsers: $cases inputs per target" >&2
PROPTEST_CASES=$cases nice -n 19 cargo test --release --locked \
  -p satquic-cc -p satquic-link -p satquic-lab -p satquic-net --test parser_fuzz
