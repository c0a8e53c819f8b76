#!/usr/bin/env python3
"""The Starlink presets beside public measurements: the same statistics from the data
and from the model, side by side (issue 40, item 1).

    scripts/leo_calibrate.py --autobahn PATH [--satquic BIN] [--hours 1] [--seeds 1,2,3]

PATH is a checkout of github.com/sys-uos/Starlink-on-the-Autobahn (or its
Data/Autobahn/throughput.zip, or the unzipped throughput.csv): 4,861 one-second iperf3
samples from a car on a motorway (Laniewski, Lanfer, Aschenbruck, "Measuring Mobile
Starlink Performance: A Comprehensive Look", IEEE OJCOMS 2025). The data is not part of
satquic; this script recomputes its statistics from the path given.

The model side is `satquic presets --probe PRESET` (crates/link/src/probe.rs): idle
pings every 14.5 ms through the link model and the capacity each second. The data's
ping traces (RTT_Loss.zip and the stationary ones) are too large for the public
snapshot this script was written against, so their statistics are the numbers the data
set's own notebooks print or plot (PUBLISHED below, each with where it is); the
throughput statistics are recomputed from throughput.csv.

Statistics, computed by the same functions for data and model:
- RTT quantiles of the pings that came back, and the mean |difference| of successive
  RTTs (jitter);
- the 15 s slots' mean throughput (slots on the global schedule: seconds 12, 27, 42, 57
  of each minute in the data, the model's own boundaries in the model), their quantiles,
  and the mean throughput by second of the slot (the dip at the boundary);
- the share of boundaries with a lost ping within 300 ms, the mean longest burst of lost
  pings there, and the highest RTT within 1 s of a boundary (median), as the data set's
  notebook Analysis_Fig7_Fig8 computes them.
"""

import argparse
import csv
import datetime
import io
import json
import math
import pathlib
import statistics
import subprocess
import sys
import zipfile
from collections import defaultdict

REPO = pathlib.Path(__file__).resolve().parent.parent
SLOT_S = 15
# The global schedule's boundaries fall on these seconds of every minute (Mohan et al.,
# WWW 2024, repository nitindermohan/multifaceted-starlink-performance,
# controlled/16c/plot.py; the Autobahn notebook Analysis_Fig7_Fig8 uses the same).
BOUNDARY_SECOND = 12
QUANTILES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95)
# The RTT's tails, beside the data's box-plot whiskers (the last sample within 1.5
# interquartile ranges of the box).
TAILS = (0.01, 0.99)
# A slot counts when it holds this many of its 15 one-second samples (the data has gaps).
MIN_SAMPLES_PER_SLOT = 14
# The windows of the notebook's handover analysis: loss within 300 ms of a boundary, the
# highest RTT within 1 s of it.
LOSS_WINDOW_S = 0.3
PEAK_WINDOW_S = 1.0

# What the data set's notebooks print or plot where this script cannot recompute it
# (the ping traces are not in the snapshot). Figures read off by eye are marked "read".
PUBLISHED = {
    "starlink-moving": {
        "what": "Autobahn, FHP dish, 19 April 2024 18:23-20:43 local, lossless pings below 200 ms",
        "rtt": {0.25: 21.5, 0.5: 27.5, 0.75: 39.0},  # Fig. 6c box, read
        "rtt_whiskers": (13.0, 65.0),  # Fig. 6c, read
        "jitter_ms": None,
        "loss_rate": 0.0284,  # Analysis_Fig4_Fig6cd: "Autobahn: 2.843697939009851" (%)
        "boundaries_with_loss": 0.47,  # Fig. 8: zero-burst share 0.46-0.70 by speed, weighted by n
        "burst_pings": 7.0,  # Analysis_Fig7_Fig8: mean nonzero burst 4.75-9.15 pings by speed
        "peak_rtt_ms": 105.0,  # Fig. 7: median of the highest RTT within 1 s of a boundary, read
    },
    "starlink-quiet": {
        "what": "stationary dish, Standard plan (Osnabrueck, May 2024); loss and peaks: the FHP dish",
        "rtt": {0.25: 18.0, 0.5: 21.0, 0.75: 23.0},  # Fig. 6c box, read
        "rtt_whiskers": (12.0, 31.0),  # Fig. 6c, read
        "jitter_ms": None,
        "loss_rate": 0.00357,  # Analysis_Fig4_Fig6cd: "PLR Standard: 0.357..." (%)
        "boundaries_with_loss": 371 / 2267,  # Analysis_Fig7_Fig8: 371 of 2,267 boundaries
        "burst_pings": 2.36,  # Analysis_Fig7_Fig8: "Stationary: 2.361185983827493"
        "peak_rtt_ms": 72.0,  # Fig. 7 stationary box median, read
        # Analysis_Fig6ab describe(): one-second download samples, Mbit/s.
        "second_down": {0.25: 197.7, 0.5: 291.8, 0.75: 360.0},
        "second_up": {0.25: 14.9, 0.5: 21.2, 0.75: 30.4},
    },
    "starlink-busy": {
        "what": "European RIPE Atlas anchors (Michel et al., IMC 2022), successive-RTT jitter (Huston 2024)",
        "rtt": {0.25: 40.0, 0.5: 50.0, 0.75: 60.0},
        "rtt_whiskers": (20.0, None),
        "jitter_ms": 6.7,
        "loss_rate": None,
        "boundaries_with_loss": None,
        "burst_pings": None,
        "peak_rtt_ms": None,
    },
}


def usage(msg):
    print(f"leo_calibrate.py: {msg}", file=sys.stderr)
    sys.exit(2)


# --- the statistics, the same for data and model ---

def quantile(xs, p):
    """Linear interpolation between order statistics (numpy's default)."""
    xs = sorted(xs)
    if not xs:
        return None
    x = p * (len(xs) - 1)
    i = int(x)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (x - i)


def rtt_stats(pings):
    """(quantiles of the RTTs, mean successive jitter, loss rate) of [(sent_s, rtt_ms|None)]."""
    rtts = [r for _, r in pings if r is not None]
    jitter = [abs(b - a) for (_, a), (_, b) in zip(pings, pings[1:]) if a is not None and b is not None]
    return ({p: quantile(rtts, p) for p in QUANTILES + TAILS}, statistics.mean(jitter) if jitter else None,
            1 - len(rtts) / len(pings) if pings else None)


def slot_means(samples, boundaries_at):
    """{slot: mean} of [(t_s, value)] one-second samples, slots starting where
    boundaries_at(t) says; only slots with MIN_SAMPLES_PER_SLOT samples."""
    by = defaultdict(list)
    for t, v in samples:
        by[boundaries_at(t)].append(v)
    return {k: statistics.mean(v) for k, v in by.items() if len(v) >= MIN_SAMPLES_PER_SLOT}


def by_second_of_slot(samples, position):
    """Mean of the samples whose one second starts at each whole second of the slot."""
    by = defaultdict(list)
    for t, v in samples:
        by[int(position(t)) % SLOT_S].append(v)
    return [statistics.mean(by[i]) if by[i] else None for i in range(SLOT_S)]


def boundary_stats(pings, boundaries):
    """As the Autobahn notebook: per boundary, the longest run of lost pings within
    LOSS_WINDOW_S, and the highest RTT within PEAK_WINDOW_S."""
    times = [t for t, _ in pings]
    lossy, bursts, peaks = 0, [], []
    import bisect
    for b in boundaries:
        lo, hi = bisect.bisect_left(times, b - LOSS_WINDOW_S), bisect.bisect_right(times, b + LOSS_WINDOW_S)
        run = longest = 0
        for _, r in pings[lo:hi]:
            run = run + 1 if r is None else 0
            longest = max(longest, run)
        if longest:
            lossy += 1
            bursts.append(longest)
        lo, hi = bisect.bisect_left(times, b - PEAK_WINDOW_S), bisect.bisect_right(times, b + PEAK_WINDOW_S)
        window = [r for _, r in pings[lo:hi] if r is not None]
        if window:
            peaks.append(max(window))
    n = len(boundaries)
    return (lossy / n if n else None, statistics.mean(bursts) if bursts else 0.0,
            statistics.median(peaks) if peaks else None)


# --- the data ---

def read_autobahn(path):
    """[(t_s, down_mbps, up_mbps)] from a checkout, throughput.zip or throughput.csv."""
    p = pathlib.Path(path)
    if p.is_dir():
        p = p / "Data" / "Autobahn" / "throughput.zip"
    if not p.is_file():
        usage(f"--autobahn {path}: no throughput.zip or throughput.csv there (a regular file)")
    try:
        if p.suffix == ".zip":
            with zipfile.ZipFile(p) as z:
                text = z.read("throughput.csv").decode()
        else:
            text = p.read_text()
    except (OSError, KeyError, UnicodeDecodeError, zipfile.BadZipFile) as e:
        usage(f"--autobahn {path}: cannot read throughput.csv ({e})")
    rows = []
    for n, r in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        try:
            t = datetime.datetime.fromisoformat(r["timestamp_start_dl"][:26])
            t = t.replace(tzinfo=datetime.timezone.utc)
            rows.append((t.timestamp(), float(r["download"]), float(r["upload"])))
        except (KeyError, TypeError, ValueError):
            usage(f"--autobahn {path}: line {n} is not a row of timestamp_start_dl, "
                  "download, upload")
    if not rows:
        usage(f"--autobahn {path}: no samples")
    return rows


def data_throughput(rows):
    slot = lambda t: math.floor((t - BOUNDARY_SECOND) / SLOT_S)
    pos = lambda t: (t - BOUNDARY_SECOND) % SLOT_S
    down = [(t, d) for t, d, _ in rows]
    up = [(t, u) for t, _, u in rows]
    return {
        "second_down": {p: quantile([d for _, d in down], p) for p in QUANTILES},
        "second_up": {p: quantile([u for _, u in up], p) for p in QUANTILES},
        "slot_down": {p: quantile(list(slot_means(down, slot).values()), p) for p in QUANTILES},
        "slot_up": {p: quantile(list(slot_means(up, slot).values()), p) for p in QUANTILES},
        "profile": by_second_of_slot(down, pos),
        "slots": len(slot_means(down, slot)),
    }


# --- the model ---

def probe(satquic, preset, hours, seed):
    cmd = [str(satquic), "presets", "--probe", preset, "--for", f"{hours}h", "--seed", str(seed)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        usage(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def model_stats(satquic, preset, hours, seeds):
    pings, down, up, boundaries, slot_down, slot_up, profile_rows = [], [], [], [], [], [], []
    offset = 0.0
    for seed in seeds:
        j = probe(satquic, preset, hours, seed)
        slots = [s.split(",") for s in j["slots"]]
        starts = [float(s[1]) for s in slots if int(s[0]) > 0]
        pings += [(offset + t, r) for t, r in j["pings"]]
        boundaries += [offset + b for b in starts]
        first = starts[0] if starts else 0.0
        slot = lambda t: math.floor((t - first) / SLOT_S)
        pos = lambda t: (t - first) % SLOT_S
        # One-second samples aligned like the data's: starting at whole seconds.
        d = [(float(i), bps / 1e6) for i, bps in enumerate(j["down_bps"])]
        u = [(float(i), bps / 1e6) for i, bps in enumerate(j["up_bps"])]
        down += [x for _, x in d]
        up += [x for _, x in u]
        slot_down += list(slot_means(d, slot).values())
        slot_up += list(slot_means(u, slot).values())
        profile_rows.append(by_second_of_slot(d, pos))
        offset += hours * 3600 + 60
    q, jitter, loss = rtt_stats(pings)
    lossy, burst, peak = boundary_stats(pings, boundaries)
    interval = 0.0145
    return {
        "rtt": q, "jitter_ms": jitter, "loss_rate": loss, "boundaries_with_loss": lossy,
        "burst_pings": burst, "burst_ms": burst * interval * 1e3, "peak_rtt_ms": peak,
        "second_down": {p: quantile(down, p) for p in QUANTILES},
        "second_up": {p: quantile(up, p) for p in QUANTILES},
        "slot_down": {p: quantile(slot_down, p) for p in QUANTILES},
        "slot_up": {p: quantile(slot_up, p) for p in QUANTILES},
        "profile": [statistics.mean(r[i] for r in profile_rows) for i in range(SLOT_S)],
        "pings": len(pings), "slots": len(slot_down),
    }


# --- the tables ---

def f(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def quantile_rows(title, data, model, unit):
    rows = [f"| {title} ({unit}) | " + " | ".join(f"p{round(p * 100)}" for p in QUANTILES) + " |",
            "|---" * (len(QUANTILES) + 1) + "|"]
    if data:
        rows.append("| data | " + " | ".join(f(data.get(p)) for p in QUANTILES) + " |")
    rows.append("| model | " + " | ".join(f(model.get(p)) for p in QUANTILES) + " |")
    return rows + [""]


def report(preset, model, published, data=None):
    out = [f"## {preset}", "", f"Data: {published['what']}. Model: {model['pings']} pings, "
           f"{model['slots']} whole slots.", ""]
    out += quantile_rows("RTT of pings", published["rtt"], model["rtt"], "ms")
    lo, hi = published["rtt_whiskers"]
    out += [f"RTT whiskers (data, read off the box plot): {f(lo)} to {f(hi)} ms; model p1 to p99: "
            f"{f(model['rtt'][0.01])} to {f(model['rtt'][0.99])} ms", ""]
    out += ["| handovers and loss | data | model |", "|---|---|---|",
            f"| mean jitter between successive RTTs, ms | {f(published['jitter_ms'])} | {f(model['jitter_ms'])} |",
            f"| ping loss rate, % | {f(pct(published['loss_rate']), 2)} | {f(pct(model['loss_rate']), 2)} |",
            f"| boundaries with a lost ping within 300 ms, % | {f(pct(published['boundaries_with_loss']))} | {f(pct(model['boundaries_with_loss']))} |",
            f"| longest loss burst there, pings (mean of those with loss) | {f(published['burst_pings'], 2)} | {f(model['burst_pings'], 2)} |",
            f"| highest RTT within 1 s of a boundary, median ms | {f(published['peak_rtt_ms'])} | {f(model['peak_rtt_ms'])} |", ""]
    for key, title in (("slot_down", "15 s slot mean, down"), ("slot_up", "15 s slot mean, up"),
                       ("second_down", "one-second samples, down"), ("second_up", "one-second samples, up")):
        d = (data or {}).get(key) or published.get(key)
        out += quantile_rows(title, d, model[key], "Mbit/s")
    if data:
        out += ["| mean down throughput by second of the slot (14 holds the next boundary), Mbit/s | "
                + " | ".join(str(i) for i in range(SLOT_S)) + " |", "|---" * (SLOT_S + 1) + "|",
                "| data | " + " | ".join(f(v, 0) for v in data["profile"]) + " |",
                "| model | " + " | ".join(f(v, 0) for v in model["profile"]) + " |", ""]
    return out


def pct(v):
    return None if v is None else 100 * v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--autobahn", required=True, help="Starlink-on-the-Autobahn checkout, throughput.zip or .csv")
    ap.add_argument("--satquic", default=str(REPO / "target/release/satquic"))
    ap.add_argument("--hours", type=float, default=1.0, help="model hours per seed (default 1)")
    ap.add_argument("--seeds", default="1,2,3", help="model seeds (each a random phase and sky)")
    ap.add_argument("--presets", default="starlink-moving,starlink-quiet,starlink-busy")
    args = ap.parse_args()
    if not pathlib.Path(args.satquic).is_file():
        usage(f"--satquic {args.satquic}: no such file (cargo build --release -p satquic)")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        usage(f"--seeds {args.seeds!r}: give whole numbers, e.g. 1,2,3")
    if not seeds or not 0 < args.hours <= 24:
        usage("--seeds needs at least one seed and --hours must be in (0, 24]")
    data = data_throughput(read_autobahn(args.autobahn))
    lines = ["# The Starlink presets beside public measurements", "",
             f"`{' '.join(['scripts/leo_calibrate.py'] + sys.argv[1:])}`", ""]
    for preset in args.presets.split(","):
        preset = preset.strip()
        if preset not in PUBLISHED:
            usage(f"--presets: {preset!r} has no published numbers here; known: {', '.join(PUBLISHED)}")
        model = model_stats(args.satquic, preset, args.hours, seeds)
        lines += report(preset, model, PUBLISHED[preset], data if preset == "starlink-moving" else None)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
