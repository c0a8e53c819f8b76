"""The LEO grid's results: leo-grid.csv (every point, direction and variant), grid.md
(summary and one row per point) and summary.txt (`scripts/grid.py report DIR` on a run
of `--kind leo`; crates/lab/campaigns/leo-grid/README.md defines every column).

Completion times are compared with the point's physical limit in the same direction
(which integrates the slots' capacities; satquic presets --limits, crates/lab/src/limit.rs) and `satellite` with
the other variants on the same point and direction: vs_cubic = satellite's time / cubic's
(below 1: satellite faster). Beside completion time, each run's queueing delay (flow 0's
data packets' wait at the bottleneck, p50 and p95, from runs.csv) and, in summary.txt,
satellite's p95 against each rival's on the same points (issue 40 item 4: at most the
rival's + 10 ms).
"""

import csv
import json
import pathlib
import statistics

import grid_leo

COLUMNS = [
    "point", "cls", "case", "direction", "variant", "fwd_median_mbps", "ret_median_mbps", "rtt_median_ms",
    "queue_ms", "bytes", "status", "completion_s", "phys_s", "vs_phys", "vs_cubic", "vs_bbr3", "vs_bbr",
    "packets_lost", "drops_congestion", "drops_random", "exit_at_s", "exit_reason", "handshake_s", "queue_p50_ms",
    "queue_p95_ms", "realtime",
    "link", "run_dir",
]
SUBJECT = "satellite"  # the variant the others are compared with
RIVALS = ("cubic", "bbr3", "bbr")
NEAR = 1.05  # "within 5 %"
QUEUE_SLACK_MS = 10.0  # satellite's p95 queueing delay "at most the rival's + 10 ms"


def num(v):
    try:
        return float(v) if v not in ("", None) else None
    except ValueError:
        return None


def ratio(a, b):
    return a / b if a is not None and b else None


def runs(out, p, direction):
    path = out / "satquic" / f"{p.point}-{direction}" / "runs.csv"
    if not path.exists():
        return {}
    with open(path) as f:
        return {r["variant"]: r for r in csv.DictReader(f)}


def collect(out, points):
    rows = []
    for p in points:
        for direction in ("up", "down"):
            phys = p.phys_up_s if direction == "up" else p.phys_down_s
            got = runs(out, p, direction)
            done = {v: num(r["completion_time_s"]) if r["status"] == "completed" else None for v, r in got.items()}
            for variant, r in got.items():
                c = done[variant]
                rows.append({
                    "point": p.point, "cls": p.cls, "case": p.case, "direction": direction, "variant": variant,
                    "fwd_median_mbps": p.fwd_median_mbps, "ret_median_mbps": p.ret_median_mbps,
                    "rtt_median_ms": p.rtt_median_ms, "queue_ms": p.queue_ms, "bytes": p.bytes,
                    "status": r["status"], "completion_s": c, "phys_s": phys, "vs_phys": ratio(c, phys),
                    **{f"vs_{rival}": ratio(c, done.get(rival)) if variant == SUBJECT else None for rival in RIVALS},
                    "packets_lost": r["packets_lost"], "drops_congestion": r["drops_congestion"],
                    "drops_random": r["drops_random"], "exit_at_s": r["exit_at_s"], "exit_reason": r["exit_reason"],
                    "handshake_s": num(r["handshake_time_s"]), "queue_p50_ms": num(r.get("queue_p50_ms")),
                    "queue_p95_ms": num(r.get("queue_p95_ms")), "realtime": p.realtime, "link": p.link,
                    "run_dir": f"satquic/{p.point}-{direction}/runs/{r['run_id']}",
                })
    return rows


def fmt(v, digits=3):
    if v is None or v == "":
        return ""
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def share(n, d):
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "0/0"


def quantile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else None


def summarize(rows, variants):
    lines = []
    for v in variants:
        for direction in ("up", "down"):
            rs = [r for r in rows if r["variant"] == v and r["direction"] == direction]
            if not rs:
                continue
            done = [r for r in rs if r["vs_phys"] is not None]
            lines.append(f"{v} {direction}load, {len(rs)} points, {len(rs) - len(done)} not finished:")
            if done:
                worst = max(done, key=lambda r: r["vs_phys"])
                lines.append(f"  vs physical limit: median {statistics.median(r['vs_phys'] for r in done):.3f}, "
                             f"p90 {quantile([r['vs_phys'] for r in done], 0.9):.3f}, "
                             f"worst {worst['vs_phys']:.3f} ({worst['point']})")
                by_case = ", ".join(
                    f"{case.removeprefix('starlink-')} {statistics.median(r['vs_phys'] for r in done if r['case'] == case):.3f}"
                    for case in grid_leo.CASES if any(r["case"] == case for r in done))
                lines.append(f"  vs physical limit by case (median): {by_case}")
                by_cls = ", ".join(
                    f"{cls} {statistics.median(r['vs_phys'] for r in done if r['cls'] == cls):.3f}"
                    for cls in ("short", "bulk", "long") if any(r["cls"] == cls for r in done))
                lines.append(f"  vs physical limit by class (median): {by_cls}")
            if v == SUBJECT:
                for rival in RIVALS:
                    pairs = [r[f"vs_{rival}"] for r in rs if r[f"vs_{rival}"] is not None]
                    if not pairs:
                        continue
                    worst = max((r for r in rs if r[f"vs_{rival}"] is not None), key=lambda r: r[f"vs_{rival}"])
                    lines.append(
                        f"  vs {rival}: at least as fast on {share(sum(x <= 1.0 for x in pairs), len(pairs))}, "
                        f"within 5 % on {share(sum(x <= NEAR for x in pairs), len(pairs))}, "
                        f"median {statistics.median(pairs):.3f}, worst {worst[f'vs_{rival}']:.3f} ({worst['point']})")
    return lines + overall(rows) + queueing(rows)


def overall(rows):
    """SUBJECT against each rival over every point and direction: the issue's measure
    (at least as fast on 95 % of the simulated points)."""
    lines = []
    for rival in RIVALS:
        pairs = [r[f"vs_{rival}"] for r in rows if r["variant"] == SUBJECT and r[f"vs_{rival}"] is not None]
        if pairs:
            lines.append(f"{SUBJECT} vs {rival}, both directions: at least as fast on "
                         f"{share(sum(x <= 1.0 for x in pairs), len(pairs))}, within 5 % on "
                         f"{share(sum(x <= NEAR for x in pairs), len(pairs))}, median {statistics.median(pairs):.3f}")
    return lines


def queueing(rows):
    """Per direction, SUBJECT's p95 queueing delay against each rival's on the points
    where both have one: the medians over points, and on how many points SUBJECT's is at
    most the rival's + QUEUE_SLACK_MS."""
    lines = []
    for direction in ("up", "down"):
        p95 = {(r["point"], r["variant"]): r["queue_p95_ms"] for r in rows
               if r["direction"] == direction and r["queue_p95_ms"] is not None}
        for rival in RIVALS:
            pts = sorted({pt for pt, v in p95 if v == rival and (pt, SUBJECT) in p95})
            if not pts:
                continue
            ours, theirs = [p95[pt, SUBJECT] for pt in pts], [p95[pt, rival] for pt in pts]
            near = sum(a <= b + QUEUE_SLACK_MS for a, b in zip(ours, theirs))
            lines.append(f"{SUBJECT} vs {rival} {direction}load, p95 queueing delay: median {statistics.median(ours):.1f} "
                         f"ms against {statistics.median(theirs):.1f} ms, at most {rival}'s + {QUEUE_SLACK_MS:g} ms "
                         f"on {share(near, len(pts))}")
    return lines


def per_point_table(rows, variants):
    head = ("| point | case | size | fwd/ret Mbit/s (median) | RTT ms (median) | queue ms | limit up/down s | "
            + " | ".join(f"{v} up/down s" for v in variants)
            + " | satellite / cubic up/down | satellite / bbr3 up/down | real time |")
    md = ["## Every point", "", "Times are completion times (upload: client start to the last byte at the server; "
          "download: to the last byte at the client); `-` not finished.", "", head,
          "|---" * (10 + len(variants)) + "|"]
    by = {}
    for r in rows:
        by.setdefault(r["point"], {})[(r["variant"], r["direction"])] = r
    for pt in sorted(by):
        got = by[pt]
        any_row = next(iter(got.values()))
        cell = lambda v, key, d=2: " / ".join(fmt(got.get((v, dr), {}).get(key), d) or "-" for dr in ("up", "down"))  # noqa: E731
        limit = " / ".join(fmt(next((r["phys_s"] for (_, d), r in got.items() if d == dr), None), 2) or "-"
                           for dr in ("up", "down"))
        md.append(
            f"| {pt} | {any_row['case'].removeprefix('starlink-')} | {size_text(any_row['bytes'])} | "
            f"{any_row['fwd_median_mbps']:.0f}/{any_row['ret_median_mbps']:.1f} | {any_row['rtt_median_ms']:.1f} | "
            f"{any_row['queue_ms']:g} | {limit} | "
            + " | ".join(cell(v, "completion_s") for v in variants)
            + f" | {cell(SUBJECT, 'vs_cubic', 3)} | {cell(SUBJECT, 'vs_bbr3', 3)} | {'yes' if any_row['realtime'] else ''} |")
    return md + [""]


def size_text(b):
    return f"{b / 1e6:g} MB" if b >= 1e6 else f"{b / 1e3:g} kB"


def report(out):
    """Everything from a LEO run directory (its points.csv and satquic/)."""
    out = pathlib.Path(out)
    points = grid_leo.read_points(out / "points.csv")
    rows = collect(out, points)
    variants_file = out / "variants.json"
    chosen = list(json.loads(variants_file.read_text())) if variants_file.exists() else []
    found = {r["variant"] for r in rows}
    variants = [v for v in chosen if v in found] + sorted(found - set(chosen))
    with open(out / "leo-grid.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: fmt(r.get(k), 6) for k in COLUMNS})
    summary = summarize(rows, variants)
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    md = ["# The LEO grid", "", "```", *summary, "```", ""] + per_point_table(rows, variants)
    (out / "grid.md").write_text("\n".join(md) + "\n")
    print("\n".join(summary))
    print(f"wrote {out}/leo-grid.csv, grid.md, summary.txt")
