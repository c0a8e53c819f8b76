#!/usr/bin/env python3
"""quicly's SEARCH evaluations beside satquic's, bin by bin, on one time axis (issue 34).

    scripts/search-trace-align.py QUICLY_SERVER_LOG SATQUIC_EVENTS [--from S] [--to S]

QUICLY_SERVER_LOG is the stdout of qperf's server (`qperf -s ... --ss search10delv`):
its `SEARCHLOG:` lines (quicly's own prints: `SEARCH, now_ms, bin_rounds, bin_shift,
2 x prev_delv, curr_delv, norm_diff, latest_rtt, smoothed_rtt`, `EXIT, now_ms`, `RESET,
now_ms, bin_ms, bin_end`) and, from a build with the local debug prints, `SQDBG` lines
(`ACK now_ms bytes in_flight cwnd ssthresh latest smoothed min largest_acked
recovery_end`, `LOST now_ms bytes pn cwnd recovery_end`). SATQUIC_EVENTS is satquic's
`events.jsonl` (`satquic sim --out DIR`: DIR/runs/*/events.jsonl) or a server qlog
(`satquic server --qlog DIR`), whose `satquic:` events carry the same `search_eval` and
`sample` records.

Time zero on both sides is the sender's first acknowledgement (the handshake's), so the
two stacks' handshakes and clocks line up whatever their time bases. Rows pair quicly's
`bin_rounds` (the last completed bin at an evaluation) with satquic's `bin - 1` (satquic
numbers the bin just started), so row k compares the windows ending at bin k on both.
Each row shows the evaluation's time, delivered bytes now (curr), the reference
(2 x delivered one RTT earlier), norm_diff, the look-back in bins (quicly prints it;
satquic's is the latest RTT over its bin) and the window, bytes in flight and latest RTT
at the last acknowledgement before it. A summary gives each side's bin duration, first
evaluation, exit, window at the exit and first loss.
"""

import argparse
import json
import sys
from pathlib import Path


def fail(message):
    print(f"search-trace-align: {message}", file=sys.stderr)
    sys.exit(2)


def quicly_trace(path):
    """quicly's evaluations, samples, resets, exit and losses, times in seconds from its
    first ACK."""
    evals, samples, resets, losses, exit_at = [], [], [], [], None
    for line in Path(path).read_text(errors="replace").splitlines():
        if line.startswith("SEARCHLOG: "):
            kind, *fields = [x.strip() for x in line[len("SEARCHLOG: "):].split(",")]
            if kind == "SEARCH":
                now, rounds, shift, ref, curr, norm, latest, _smoothed = fields[:8]
                evals.append({"t": int(now) / 1e3, "bin": int(rounds), "shift": int(shift),
                              "ref": float(ref), "curr": float(curr), "norm": float(norm),
                              "rtt": int(latest) / 1e3})
            elif kind == "EXIT" and exit_at is None:
                exit_at = int(fields[0]) / 1e3
            elif kind == "RESET":
                resets.append({"t": int(fields[0]) / 1e3, "bin_s": int(fields[1]) / 1e3})
        elif line.startswith("SQDBG ACK "):
            f = line.split()
            samples.append({"t": int(f[2]) / 1e3, "cwnd": int(f[5]), "in_flight": int(f[4]) - int(f[3]),
                            "rtt": int(f[7]) / 1e3})
        elif line.startswith("SQDBG LOST "):
            losses.append(int(line.split()[2]) / 1e3)
    if not evals and not samples:
        fail(f"{path}: no SEARCHLOG or SQDBG lines (qperf's server stdout, run with --ss search10delv)")
    origin = samples[0]["t"] if samples else (resets[0]["t"] if resets else evals[0]["t"])
    shift_times(evals + samples + resets, origin)
    return {
        "evals": evals,
        "samples": samples,
        "bin_s": resets[0]["bin_s"] if resets else None,
        "exit": None if exit_at is None else exit_at - origin,
        "first_loss": losses[0] - origin if losses else None,
        "losses": len(losses) if samples else None,
    }


def shift_times(rows, origin):
    for row in rows:
        row["t"] -= origin


def satquic_records(path):
    """satquic's events from events.jsonl or a qlog (JSON-SEQ with `satquic:` events)."""
    for line in Path(path).read_text().splitlines():
        line = line.strip().lstrip("\x1e")
        if not line:
            continue
        record = json.loads(line)
        if "type" in record and "at" in record:
            yield record
        elif str(record.get("name", "")).startswith("satquic:"):
            data = dict(record.get("data", {}))
            data["type"] = record["name"].split(":", 1)[1]
            data["at"] = record["time"] / 1e3 if "at" not in data else data["at"]
            yield data


def satquic_trace(path):
    evals, samples, exit_at, exit_cwnd, first_loss, congestions = [], [], None, None, None, 0
    for e in satquic_records(path):
        kind = e["type"]
        if kind == "search_eval":
            evals.append({"t": e["at"], "bin": e["bin"] - 1, "ref": e["reference"], "curr": e["curr_delivered"],
                          "norm": e["norm_diff"], "outcome": e.get("outcome")})
        elif kind == "sample":
            samples.append({"t": e["at"], "cwnd": e["cwnd"], "in_flight": e["in_flight"], "rtt": e["rtt"]})
        elif kind == "slow_start_exit" and not e.get("shadow") and exit_at is None:
            exit_at, exit_cwnd = e["at"], e.get("cwnd_before")
        elif kind == "congestion":
            congestions += 1
            first_loss = e["at"] if first_loss is None else first_loss
    if not samples:
        fail(f"{path}: no sample events (satquic's events.jsonl or server qlog)")
    origin = samples[0]["t"]
    shift_times(evals + samples, origin)
    return {
        "evals": evals,
        "samples": samples,
        "bin_s": None,
        "exit": None if exit_at is None else exit_at - origin,
        "exit_cwnd": exit_cwnd,
        "first_loss": None if first_loss is None else first_loss - origin,
        "losses": None,
        "congestion_events": congestions,
    }


def state_at(samples, t):
    """The last sample at or before t."""
    best = None
    for s in samples:
        if s["t"] > t:
            break
        best = s
    return best


def bin_of(trace):
    """The bin duration: printed by quicly, else the spacing of the evaluations."""
    if trace["bin_s"]:
        return trace["bin_s"]
    gaps = sorted(b["t"] - a["t"] for a, b in zip(trace["evals"], trace["evals"][1:])
                  if b["bin"] == a["bin"] + 1)
    return gaps[len(gaps) // 2] if gaps else None


def cell(trace, row, bin_s):
    if row is None:
        return ["-"] * 8
    s = state_at(trace["samples"], row["t"]) or {}
    shift = row.get("shift")
    if shift is None and s.get("rtt") and bin_s:
        shift = round(s["rtt"] / bin_s)
    return [f"{row['t']:.3f}", f"{row['curr'] / 1e6:.3f}", f"{row['ref'] / 1e6:.3f}", f"{row['norm']:.3f}",
            str(shift if shift is not None else "-"),
            f"{s['cwnd'] / 1e6:.2f}" if s else "-", f"{s['in_flight'] / 1e6:.2f}" if s else "-",
            f"{s['rtt']:.3f}" if s else "-"]


def window_at_exit(trace):
    if trace.get("exit_cwnd"):
        return trace["exit_cwnd"]
    if trace["exit"] is None:
        return None
    s = state_at(trace["samples"], trace["exit"])
    return s["cwnd"] if s else None


def summary(name, trace):
    def f(x, unit="s"):
        return "-" if x is None else (f"{x:.3f} {unit}" if unit == "s" else f"{x / 1e6:.2f} MB")
    bin_s = bin_of(trace)
    first = next((e["t"] for e in trace["evals"] if e["ref"] > 0), None)
    print(f"{name}: bin {f(bin_s)}, first evaluation with a reference {f(first)}, exit {f(trace['exit'])}"
          f" at a window of {f(window_at_exit(trace), 'MB')}, first loss {f(trace['first_loss'])}"
          + (f", {trace['losses']} packets declared lost" if trace.get("losses") is not None else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("quicly_log")
    p.add_argument("satquic_events")
    p.add_argument("--from", dest="start", type=float, default=0.0, help="first time shown (s)")
    p.add_argument("--to", dest="end", type=float, default=1e9, help="last time shown (s)")
    args = p.parse_args()
    for path in (args.quicly_log, args.satquic_events):
        if not Path(path).is_file():
            fail(f"no file {path}")
    q, s = quicly_trace(args.quicly_log), satquic_trace(args.satquic_events)
    print("time zero: each sender's first acknowledgement; MB = 10^6 bytes\n")
    summary("quicly ", q)
    summary("satquic", s)
    print()
    head = ["t", "curr", "ref", "norm", "shift", "cwnd", "inflight", "rtt"]
    print("| bin | " + " | ".join("q " + h for h in head) + " | " + " | ".join("s " + h for h in head) + " |")
    print("|" + "---|" * (1 + 2 * len(head)))
    qb, sb = {e["bin"]: e for e in q["evals"]}, {e["bin"]: e for e in s["evals"]}
    qbin, sbin = bin_of(q), bin_of(s)
    for k in sorted(set(qb) | set(sb)):
        rows = [qb.get(k), sb.get(k)]
        times = [r["t"] for r in rows if r]
        if not any(args.start <= t <= args.end for t in times):
            continue
        print(f"| {k} | " + " | ".join(cell(q, rows[0], qbin)) + " | " + " | ".join(cell(s, rows[1], sbin)) + " |")


if __name__ == "__main__":
    main()
