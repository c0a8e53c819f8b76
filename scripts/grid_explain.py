"""Where a grid point's time goes (scripts/grid.py explain DIR POINT [--variant V]).

For each direction: the run's summary (completion, the physical limit, handshake, the
slow-start exit, losses), then a timeline, one row per round trip, of the window, the
bytes in flight and queued, the bytes the receiver has, and the *deficit*: how far the
transfer is behind an ideal one that starts at the earliest moment data can arrive and
then receives at the link's goodput. The deficit grows while the sender is below line
rate (start-up, recovery) and stays flat while it is at line rate; at the end it is the
completion time minus the physical limit. picoquic's window (its BBRv3 and CUBIC, from
the cached qlog series) is shown at the same times for comparison.
"""

import bisect
import csv
import json
import pathlib
import sys

import grid_picoquic
import grid_points

MAX_ROWS = 40


def read_series(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def at(rows, t, key="time_s"):
    """The last row at or before t."""
    times = [float(r[key]) for r in rows]
    i = bisect.bisect_right(times, t) - 1
    return rows[i] if i >= 0 else None


def picoquic_series(out, p):
    meta = out / "picoquic.json"
    if p.loss > 0 or not meta.exists():
        return {}
    cache = pathlib.Path(json.loads(meta.read_text())["cache"])
    found = {}
    for test, label in grid_picoquic.TESTS.items():
        path = cache / (grid_picoquic.key(p, test) + ".series.csv")
        result = grid_picoquic.load(cache, p, test)
        if path.exists() and result:
            found[label] = (read_series(path), result)
    return found


def explain_direction(out, p, variant, direction, pq, serialization_s):
    upload = direction == "up"
    camp = out / "satquic" / f"{p.point}-{direction}"
    if not (camp / "runs.csv").is_file():
        return [f"{direction}: no run of {p.point} in {out} (grid.py run --points {p.point})"]
    with open(camp / "runs.csv") as f:
        runs = [r for r in csv.DictReader(f) if r["variant"] == variant]
    if not runs:
        return [f"{direction}: no {variant} run"]
    r = runs[0]
    run_dir = camp / "runs" / r["run_id"]
    flow = json.loads((run_dir / "summary.json").read_text())["flows"][0]
    one_way = p.owd_ms / 1000
    rtt = 2 * one_way
    limit = p.phys_up_s if upload else p.phys_down_s
    goodput = p.fwd_bps * grid_points.SATQUIC_PAYLOAD / (grid_points.SATQUIC_DATAGRAM + grid_points.IP_UDP_OVERHEAD)
    t0 = limit - serialization_s()  # the first byte's earliest arrival
    c = flow["completion_time_s"]
    ex = flow.get("slow_start_exit") or {}
    lines = [
        f"{direction}load ({'client' if upload else 'server'} sends): {flow['status']} in {c} s, limit {limit:.3f} s "
        f"(ratio {c / limit:.3f}), handshake {flow['handshake_time_s']} s, lost {flow['packets_lost']} packets "
        f"(drops {flow['link_drops']}), first drop {flow['first_drop_at_s']}, first loss detected "
        f"{flow['first_loss_detected_at_s']}, slow-start exit {ex.get('at_s', ex.get('at'))} "
        f"{ex.get('reason', '')} cwnd {ex.get('cwnd_before', '')} -> {ex.get('cwnd_after', '')}"
        if c else f"{direction}load: {flow['status']}, delivered {flow['delivered_bytes']} bytes",
    ]
    series = read_series(run_dir / "series.csv")
    end = c if c else float(series[-1]["time_s"])
    steps = max(1, int(end / rtt / MAX_ROWS) + 1)
    head = f"  {'t s':>7} {'cwnd MB':>8} {'flight MB':>9} {'queue MB':>8} {'recv MB':>8} {'deficit s':>9}"
    head += "".join(f" {label + ' cwnd MB':>20}" for label in pq)
    lines.append(head)
    k = 1
    while k * rtt <= end + rtt * steps:
        t = min(k * rtt, end)
        row = at(series, t)
        if row:
            recv = int(row["delivered_bytes"])
            deficit = max(0.0, t - t0) - recv / goodput * 8
            cells = [f"{t:7.2f}", f"{int(row['cwnd_bytes']) / 1e6:8.3f}", f"{int(row['in_flight_bytes']) / 1e6:9.3f}",
                     f"{int(row['queue_bytes']) / 1e6:8.3f}", f"{recv / 1e6:8.2f}", f"{deficit:9.3f}"]
            # picoquic's clock is an upload's: a download's comparable time is one way later
            shift = 0 if upload else one_way
            for label, (rows, _) in pq.items():
                prow = at(rows, t - shift)
                cells.append(f"{(int(prow['cwnd_bytes']) / 1e6 if prow and prow['cwnd_bytes'] else 0):20.3f}")
            lines.append("  " + " ".join(cells))
        if t >= end:
            break
        k += steps
    return lines


def explain(out, point, variant, satquic):
    """`satquic`: gives the binary asked for the limit (once the point is known)."""
    out = pathlib.Path(out)
    points = {p.point: p for p in grid_points.read_points(out / "points.csv")}
    if point not in points:
        print(f"grid.py: no point {point} in {out}/points.csv", file=sys.stderr)
        sys.exit(2)
    p = points[point]
    # The data's time at line rate, from satquic's model, asked once a run needs it.
    asked = []

    def serialization_s():
        if not asked:
            asked.append(grid_points.point_limits(satquic(), p)[2])
        return asked[0]

    pq = picoquic_series(out, p)
    lines = [
        f"{p.point} ({p.cls}): forward {p.fwd_bps / 1e6:.2f} Mbit/s, return {p.ret_bps / 1e6:.2f} Mbit/s, "
        f"{p.owd_ms} ms each way, queue {p.queue_bdp} BDP ({p.fwd_queue_bytes / 1e6:.2f} MB), loss {p.loss:g}, "
        f"{p.bytes / 1e6:g} MB = {p.size_bdp} BDP (BDP {p.bdp_bytes / 1e6:.2f} MB)",
    ]
    for label, (_, r) in pq.items():
        lost = sum(v for k, v in r.get("lost", {}).items() if k.startswith("1RTT"))
        lines.append(f"{label}: {r['completion_s']} s (upload), {lost} packets lost, states {r.get('states')}")
    for direction in ("up", "down"):
        lines += explain_direction(out, p, variant, direction, pq, serialization_s)
    print("\n".join(lines))
