"""The satellite grid's results: grid.csv (every point, variant and direction), grid.md
(summary, worst points, per-point table), summary.txt and heatmaps (scripts/grid.py
report DIR; crates/lab/campaigns/grid/README.md defines every column).

Times compare like with like: picoquic times client uploads (client start to the last byte
at the server) as satquic times an upload; a satquic download is timed to the last byte at
the client and waits, by construction, for the request's half RTT (one way) before the
server can send, so its `comparable_s` is its completion minus one way.
"""

import csv
import json
import pathlib
import statistics
import sys

import grid_picoquic
import grid_points

COLUMNS = [
    "point", "cls", "direction", "impl", "variant", "fwd_mbps", "ret_mbps", "owd_ms", "queue_bdp",
    "loss", "bytes", "size_bdp", "status", "completion_s", "comparable_s", "phys_s", "vs_phys",
    "pq_best", "pq_best_s", "vs_pq", "packets_lost", "drops_congestion", "drops_random",
    "exit_at_s", "exit_reason", "exit_class", "handshake_s", "transfer_s", "first_mb_s",
    "pq_fwd_mbps", "pq_ret_mbps", "run_dir",
]
AT_LEAST_BDP = 50  # the "lossless points of at least 50 BDP"
PHYS_BOUND = 1.25  # ... within 1.25x of the physical limit
AGREEMENT = 0.02  # download and upload within 2 %
BEHIND = 1.05  # never more than 5 % behind picoquic's best
ANNOTATED = 10  # points named in a heatmap panel, the worst first


def num(v):
    try:
        return float(v) if v not in ("", None) else None
    except ValueError:
        return None


def ratio(a, b):
    return a / b if a is not None and b else None


def first_mb_s(run_dir):
    path = run_dir / "chunks.csv"
    if not path.exists():
        return None
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return num(rows[0]["time_s"]) if rows else None


def satquic_rows(out, p, direction):
    """runs.csv rows of a point's campaign in one direction, keyed by variant."""
    path = out / "satquic" / f"{p.point}-{direction}" / "runs.csv"
    if not path.exists():
        return {}
    with open(path) as f:
        return {r["variant"]: r for r in csv.DictReader(f)}


def picoquic_results(out, p):
    """{label: cached result} of picoquic on a lossless point."""
    meta = out / "picoquic.json"
    if p.loss > 0 or not meta.exists():
        return {}
    cache = json.loads(meta.read_text())["cache"]
    found = {}
    for test, label in grid_picoquic.TESTS.items():
        r = grid_picoquic.load(cache, p, test)
        if r:
            found[label] = r
    return found


def base_row(p, direction):
    return {"phys_up_s": p.phys_up_s,
        "point": p.point, "cls": p.cls, "direction": direction, "fwd_mbps": round(p.fwd_bps / 1e6, 3),
        "ret_mbps": round(p.ret_bps / 1e6, 3), "owd_ms": p.owd_ms, "queue_bdp": p.queue_bdp,
        "loss": p.loss, "bytes": p.bytes, "size_bdp": p.size_bdp,
        "pq_fwd_mbps": p.pq_fwd_mbps, "pq_ret_mbps": p.pq_ret_mbps,
    }


def collect(out, points):
    rows = []
    for p in points:
        pq = picoquic_results(out, p)
        done = {k: v["completion_s"] for k, v in pq.items() if v.get("completion_s")}
        best = min(done.items(), key=lambda kv: kv[1]) if done else (None, None)
        for label, r in sorted(pq.items()):
            row = base_row(p, "up") | {"impl": "picoquic", "variant": label, "status": r["status"]}
            c = r.get("completion_s")
            lost = sum(v for k, v in r.get("lost", {}).items() if k.startswith("1RTT"))
            row |= {"completion_s": c, "comparable_s": c, "phys_s": p.phys_up_s, "vs_phys": ratio(c, p.phys_up_s),
                    "pq_best": best[0], "pq_best_s": best[1], "vs_pq": ratio(c, best[1]), "packets_lost": lost}
            rows.append(row)
        for direction in ("up", "down"):
            upload = direction == "up"
            phys = p.phys_up_s if upload else p.phys_down_s
            for variant, r in satquic_rows(out, p, direction).items():
                c = num(r["completion_time_s"]) if r["status"] == "completed" else None
                comparable = c if upload or c is None else c - p.owd_ms / 1000
                hs = num(r["handshake_time_s"])
                run_dir = out / "satquic" / f"{p.point}-{direction}" / "runs" / r["run_id"]
                rows.append(base_row(p, direction) | {
                    "impl": "satquic", "variant": variant, "status": r["status"], "completion_s": c,
                    "comparable_s": comparable, "phys_s": phys, "vs_phys": ratio(c, phys),
                    "pq_best": best[0], "pq_best_s": best[1], "vs_pq": ratio(comparable, best[1]),
                    "packets_lost": r["packets_lost"], "drops_congestion": r["drops_congestion"],
                    "drops_random": r["drops_random"], "exit_at_s": r["exit_at_s"],
                    "exit_reason": r["exit_reason"], "exit_class": r["exit_class"], "handshake_s": hs,
                    "transfer_s": c - hs if c is not None and hs is not None else None,
                    "first_mb_s": first_mb_s(run_dir), "run_dir": str(run_dir.relative_to(out)),
                })
    return rows


def fmt(v, digits=3):
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: fmt(r.get(k), 6) for k in COLUMNS})


def share(n, d):
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "0/0"


def summarize(rows):
    """Summary lines per satquic variant and direction."""
    lines = []
    variants = sorted({r["variant"] for r in rows if r["impl"] == "satquic"})
    for v in variants:
        for direction in ("up", "down"):
            rs = [r for r in rows if r["impl"] == "satquic" and r["variant"] == v and r["direction"] == direction]
            if not rs:
                continue
            clock = "upload" if direction == "up" else "download (completion - one way)"
            vs_pq = [r for r in rs if r["pq_best_s"]]
            ahead = sum(1 for r in vs_pq if r["vs_pq"] is not None and r["vs_pq"] <= 1.0)
            near = sum(1 for r in vs_pq if r["vs_pq"] is not None and r["vs_pq"] <= BEHIND)
            worst = max(vs_pq, key=lambda r: r["vs_pq"] if r["vs_pq"] is not None else float("inf"), default=None)
            lines.append(f"{v} {direction} ({clock}), {len(rs)} points, {sum(1 for r in rs if r['completion_s'] is None)} not finished:")
            if vs_pq:
                med = statistics.median(r["vs_pq"] for r in vs_pq if r["vs_pq"] is not None)
                lines.append(
                    f"  vs picoquic's best (lossless): at least as fast on {share(ahead, len(vs_pq))}, "
                    f"within 5 % on {share(near, len(vs_pq))}, median {med:.3f}, "
                    f"worst {fmt(worst['vs_pq']) or 'not finished'} ({worst['point']})")
            long = [r for r in rs if r["loss"] == 0 and r["size_bdp"] >= AT_LEAST_BDP]
            within = sum(1 for r in long if r["vs_phys"] is not None and r["vs_phys"] <= PHYS_BOUND)
            if long:
                w = max(long, key=lambda r: r["vs_phys"] or float("inf"))
                lines.append(f"  lossless >= {AT_LEAST_BDP} BDP within {PHYS_BOUND}x of the physical limit: "
                             f"{share(within, len(long))}, worst {fmt(w['vs_phys']) or 'not finished'} ({w['point']})")
            for loss in sorted({r["loss"] for r in rs}):
                ls = [r["vs_phys"] for r in rs if r["loss"] == loss and r["vs_phys"] is not None]
                if ls:
                    lines.append(f"  vs physical limit, loss {loss:g}: median {statistics.median(ls):.3f}, "
                                 f"worst {max(ls):.3f} ({len(ls)} finished)")
        lines += agreement(rows, v)
    for label in sorted({r["variant"] for r in rows if r["impl"] == "picoquic"}):
        long = [r for r in rows if r["variant"] == label and r["size_bdp"] >= AT_LEAST_BDP and r["vs_phys"]]
        if long:
            within = sum(1 for r in long if r["vs_phys"] <= PHYS_BOUND)
            lines.append(f"{label}: lossless >= {AT_LEAST_BDP} BDP within {PHYS_BOUND}x of the physical limit: "
                         f"{share(within, len(long))}")
    return lines


def agreement(rows, variant):
    """Download (comparable) against upload, point by point."""
    by = {}
    for r in rows:
        if r["impl"] == "satquic" and r["variant"] == variant and r["comparable_s"] is not None:
            by.setdefault(r["point"], {})[r["direction"]] = r
    diffs = [(abs(d["down"]["comparable_s"] / d["up"]["comparable_s"] - 1), raw_d(d), pt)
             for pt, d in by.items() if len(d) == 2]
    if not diffs:
        return []
    within = sum(1 for d, _, _ in diffs if d <= AGREEMENT)
    worst = max(diffs)
    return [
        f"  download/upload agreement ({variant}): comparable times within 2 % on {share(within, len(diffs))}, "
        f"median {100 * statistics.median(d for d, _, _ in diffs):.1f} %, worst {100 * worst[0]:.1f} % ({worst[2]}); "
        f"raw times: median {100 * statistics.median(d for _, d, _ in diffs):.1f} % apart"
    ]


def raw_d(d):
    return abs(d["down"]["completion_s"] / d["up"]["completion_s"] - 1)


def worst_points(rows, variant, direction, n=10):
    rs = [r for r in rows if r["impl"] == "satquic" and r["variant"] == variant and r["direction"] == direction]
    inf = float("inf")
    by_pq = sorted([r for r in rs if r["pq_best_s"]], key=lambda r: r["vs_pq"] or inf, reverse=True)[:n]
    by_phys = sorted(rs, key=lambda r: r["vs_phys"] or inf, reverse=True)[:n]
    return by_pq, by_phys


def point_cells(r):
    return (f"{r['point']} | {r['fwd_mbps']:.1f}/{r['ret_mbps']:.2f} | {r['owd_ms']} | {r['queue_bdp']:g} | "
            f"{100 * r['loss']:g} % | {r['bytes'] / 1e6:g} MB ({r['size_bdp']:.1f})")


def markdown(rows, summary, variants):
    md = ["# The satellite grid", "", "```", *summary, "```", ""]
    head = "| point | fwd/ret Mbit/s | one way ms | queue BDP | loss | size (BDP) |"
    for v in variants:
        for direction in ("up", "down"):
            by_pq, by_phys = worst_points(rows, v, direction)
            md += [f"## {v}, {direction}: the 10 points furthest behind picoquic's best", "",
                   head + " satquic s | picoquic best s | ratio | lost | exit |", "|---" * 11 + "|"]
            md += [f"| {point_cells(r)} | {fmt(r['comparable_s'], 2)} | {fmt(r['pq_best_s'], 2)} ({r['pq_best']}) | "
                   f"{fmt(r['vs_pq'])} | {r['packets_lost']} | {r['exit_reason'] or ''} {fmt(num(r['exit_at_s']), 2)} |"
                   for r in by_pq]
            md += ["", f"## {v}, {direction}: the 10 points furthest from the physical limit", "",
                   head + " satquic s | limit s | ratio | lost | exit |", "|---" * 11 + "|"]
            md += [f"| {point_cells(r)} | {fmt(r['completion_s'], 2)} | {fmt(r['phys_s'], 2)} | {fmt(r['vs_phys'])} | "
                   f"{r['packets_lost']} | {r['exit_reason'] or ''} {fmt(num(r['exit_at_s']), 2)} |" for r in by_phys]
            md.append("")
    md += per_point_table(rows, variants)
    return "\n".join(md) + "\n"


def per_point_table(rows, variants):
    """One row per point: upload and comparable download times of every variant,
    picoquic's two, the limit, and the first variant's ratios."""
    main = variants[0]
    cols = [f"{v} up/down s" for v in variants]
    md = [f"## Every point (comparable times: uploads, and downloads minus one way; ratios of {main})", "",
          "| point | fwd/ret Mbit/s | one way ms | queue BDP | loss | size (BDP) | limit s | " + " | ".join(cols)
          + " | picoquic bbr3 / cubic s | vs picoquic up/down | vs limit up/down |",
          "|---" * (10 + len(cols)) + "|"]
    by = {}
    for r in rows:
        by.setdefault(r["point"], []).append(r)
    for pt in sorted(by):
        rs = by[pt]
        get = lambda impl, v, d: next((r for r in rs if r["impl"] == impl and r["variant"] == v and r["direction"] == d), None)
        cells = []
        for v in variants:
            u, d = get("satquic", v, "up"), get("satquic", v, "down")
            cells.append(f"{fmt(u and u['comparable_s'], 2) or '-'} / {fmt(d and d['comparable_s'], 2) or '-'}")
        pb, pc = get("picoquic", "picoquic-bbr3", "up"), get("picoquic", "picoquic-cubic", "up")
        pq = f"{fmt(pb and pb['completion_s'], 2) or '-'} / {fmt(pc and pc['completion_s'], 2) or '-'}" if pb or pc else "loss: -"
        u, d = get("satquic", main, "up"), get("satquic", main, "down")
        vs_pq = f"{fmt(u and u['vs_pq']) or '-'} / {fmt(d and d['vs_pq']) or '-'}"
        vs_phys = f"{fmt(u and u['vs_phys']) or '-'} / {fmt(d and d['vs_phys']) or '-'}"
        md.append(f"| {point_cells(rs[0])} | {fmt(rs[0]['phys_up_s'], 2)} | "
                  + " | ".join(cells) + f" | {pq} | {vs_pq} | {vs_phys} |")
    return md + [""]


def heatmaps(out, rows, variants):
    """Per variant: satquic / picoquic's best and satquic / the physical limit, over the
    forward rate and the size in BDP, upload and (comparable) download. Skipped, with a
    note, where matplotlib is not installed: the CSV, tables and summary do not need it."""
    try:
        import matplotlib
    except ImportError:
        print("grid report: matplotlib is not installed, so no heatmaps", file=sys.stderr)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm, TwoSlopeNorm
    from matplotlib.ticker import FuncFormatter, NullFormatter

    markers = {0.0: "o", 0.001: "^", 0.01: "s"}
    for v in variants:
        fig, axes = plt.subplots(2, 2, figsize=(13, 10), sharex=True, sharey=True)
        for col, direction in enumerate(("up", "down")):
            rs = [r for r in rows if r["impl"] == "satquic" and r["variant"] == v and r["direction"] == direction]
            clock = "upload" if direction == "up" else "download minus one way"
            for row, (field, title, norm, cmap) in enumerate([
                ("vs_pq", f"{clock} / picoquic's best (lossless points)", TwoSlopeNorm(1.0, 0.6, 1.6), "RdYlGn_r"),
                ("vs_phys", f"{direction}load / its physical limit (all points)", LogNorm(1.0, 4.0), "viridis_r"),
            ]):
                ax = axes[row][col]
                for loss, marker in markers.items():
                    pts = [r for r in rs if r["loss"] == loss and (field == "vs_phys" or r["pq_best_s"])]
                    done = [r for r in pts if r[field] is not None]
                    sc = ax.scatter([r["fwd_mbps"] for r in done], [r["size_bdp"] for r in done],
                                    c=[min(max(r[field], norm.vmin), norm.vmax) for r in done], cmap=cmap, norm=norm,
                                    marker=marker, s=90, edgecolors="black", linewidths=0.5)
                    capped = [r for r in pts if r[field] is None]
                    ax.scatter([r["fwd_mbps"] for r in capped], [r["size_bdp"] for r in capped], marker="x",
                               c="red", s=60)
                    for r in done:
                        if r[field] >= labelled_above(rs, field):
                            ax.annotate(f"{r['point']} {r[field]:.2f}", (r["fwd_mbps"], r["size_bdp"]),
                                        fontsize=7, xytext=(4, 3), textcoords="offset points")
                bar = fig.colorbar(sc, ax=ax, shrink=0.8)
                if field == "vs_phys":
                    bar.set_ticks([1, 1.25, 1.5, 2, 3, 4])
                bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                bar.ax.yaxis.set_minor_formatter(NullFormatter())
                axes_like_the_grid(ax)
                ax.set_title(f"satquic {v}: {title}", fontsize=9)
                ax.grid(True, which="both", alpha=0.2)
                if row == 1:
                    ax.set_xlabel("forward rate, Mbit/s")
                if col == 0:
                    ax.set_ylabel("size, BDP")
        proxies = [plt.Line2D([], [], marker=m, color="gray", linestyle="", label=f"loss {100 * loss:g} %")
                   for loss, m in markers.items()]
        proxies.append(plt.Line2D([], [], marker="x", color="red", linestyle="", label="not finished"))
        fig.legend(handles=proxies, loc="lower center", ncol=4, fontsize=9)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        fig.savefig(out / f"heatmap-{v}.png", dpi=110)
        plt.close(fig)
    return True


def labelled_above(rows, field):
    """The ratio from which a panel names its points: its ANNOTATED worst, and only those
    behind picoquic (above 1.005) or far from the limit (above 1.5)."""
    floor = 1.005 if field == "vs_pq" else 1.5
    values = sorted((r[field] for r in rows if r[field] is not None), reverse=True)
    return max(floor, values[ANNOTATED - 1] if len(values) >= ANNOTATED else 0)


def axes_like_the_grid(ax):
    """Log axes over the grid's whole space, with plain numbers, the same in every panel."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(8, 1300)
    ax.set_ylim(0.0007, 150)
    ax.xaxis.set_major_locator(FixedLocator([10, 20, 50, 100, 200, 500, 1000]))
    ax.yaxis.set_major_locator(FixedLocator([0.001, 0.01, 0.1, 1, 10, 50, 100]))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())


def report(out):
    """Everything from a run directory (its points.csv, satquic/, picoquic.json)."""
    out = pathlib.Path(out)
    points = grid_points.read_points(out / "points.csv")
    rows = collect(out, points)
    variants_file = out / "variants.json"
    chosen = list(json.loads(variants_file.read_text())) if variants_file.exists() else []
    found = {r["variant"] for r in rows if r["impl"] == "satquic"}
    variants = [v for v in chosen if v in found] + sorted(found - set(chosen))
    write_csv(out / "grid.csv", rows)
    summary = summarize(rows)
    (out / "summary.txt").write_text("\n".join(summary) + "\n")
    (out / "grid.md").write_text(markdown(rows, summary, variants))
    drawn = heatmaps(out, rows, variants)
    print("\n".join(summary))
    print(f"wrote {out}/grid.csv, grid.md, summary.txt" + (", heatmap-*.png" if drawn else ""))
