#!/usr/bin/env bash
# scorecard.html in a real browser: runs `satquic scorecard` on the test set
# (crates/lab/campaigns/scorecard/tiny.toml), renders the page in headless Chromium
# (Debian's `chromium`; scripts/test.sh installs it) and checks that every regime's panel
# is drawn, the busy beam's and LEO responsiveness's cells with their figures: in the DOM
# Chromium built, and as a screenshot that is not blank.
# Usage: scripts/check-scorecard-html.sh [path/to/satquic]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/satquic}
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "check-scorecard-html: no chromium on PATH" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" scorecard --set crates/lab/campaigns/scorecard/tiny.toml --out "$work/out" --jobs 2 >/dev/null 2>&1
flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile")
"$browser" "${flags[@]}" --dump-dom "file://$work/out/scorecard.html" >"$work/dom.html" 2>/dev/null
for regime in geo-lossless geo-loss startup resumption beside leo; do
    grep -q "id=\"panel-$regime\"" "$work/dom.html" ||
        { echo "check-scorecard-html: panel $regime not drawn" >&2; exit 1; }
    grep -q "<svg" "$work/dom.html" || { echo "check-scorecard-html: no heatmap" >&2; exit 1; }
done
# The busy beam's and LEO responsiveness's cells carry a figure (the objects' median over
# the reference's), not "-".
for cell in beam-geo-viasat rpm-starlink-busy-cubic; do
    grep -Eq "<title>$cell: [0-9]" "$work/dom.html" ||
        { echo "check-scorecard-html: no figure in the $cell cell" >&2; exit 1; }
done
"$browser" "${flags[@]}" --window-size=1200,1600 --screenshot="$work/page.png" \
    "file://$work/out/scorecard.html" >/dev/null 2>&1
python3 - "$work/page.png" <<'PY'
import sys, zlib, struct
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
# Not blank: the compressed image data of a one-colour page is tiny.
idat = b"".join(data[i + 8:i + 8 + struct.unpack(">I", data[i:i + 4])[0]]
                for i in range(8, len(data)) if data[i + 4:i + 8] == b"IDAT")
raw = zlib.decompress(idat)
assert len(set(raw[::97])) > 3, "the screenshot is blank"
PY
echo "check-scorecard-html: every regime's panel drawn"
