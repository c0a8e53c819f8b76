#!/usr/bin/env python3
"""A satquic campaign in pandas: a summary table and one seed figure, redrawn.

    python3 examples/analysis.py CAMPAIGN_DIR [--run RUN_ID] [--out FIGURE.png]

Reads CAMPAIGN_DIR/runs.csv (one row per run, `satquic campaign run` or `collect`), each
run's runs/<run_id>/chunks.csv (the time each MB was delivered) and one run's
series.csv (cwnd, bytes in flight and delivered bytes over time), then

- prints per link and variant: runs, completed, median completion time, median goodput
  and median slow-start exit time;
- draws seed 000 Fig. 10 (median time to deliver each MB per variant, with the
  interquartile range shaded) above the cwnd and delivered bytes of one run (the first
  completed run, or --run), into FIGURE.png (default CAMPAIGN_DIR/analysis.png).

Needs pandas and matplotlib (python3 -m pip install pandas matplotlib).
"""

import argparse
import sys
from pathlib import Path

try:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import pandas as pd
except ImportError as e:
    sys.exit(f"analysis.py: {e.name} is missing; install it: python3 -m pip install pandas matplotlib")


def fail(message):
    print(f"analysis.py: {message}", file=sys.stderr)
    sys.exit(2)


def load_runs(campaign):
    path = campaign / "runs.csv"
    if not path.is_file():
        fail(f"{path}: no runs.csv (run `satquic campaign collect {campaign}` first)")
    runs = pd.read_csv(path)
    if runs.empty:
        fail(f"{path}: no runs")
    return runs


def load_chunks(campaign, runs):
    """Per-MB delivery times of flow 0 of every completed run, one row per (run, MB)."""
    frames = []
    for run in runs.loc[runs["status"] == "completed"].itertuples():
        path = campaign / "runs" / run.run_id / "chunks.csv"
        if not path.is_file():
            continue
        chunks = pd.read_csv(path)
        chunks = chunks.loc[chunks["flow"] == 0, ["mb", "time_s"]]
        chunks["run_id"] = run.run_id
        chunks["variant"] = run.variant
        chunks["link"] = run.link
        frames.append(chunks)
    if not frames:
        fail(f"{campaign}: no completed run has a chunks.csv")
    return pd.concat(frames, ignore_index=True)


def summary(runs):
    """One row per link and variant: what the seeds' tables report."""
    grouped = runs.groupby(["link", "variant"], sort=False)
    table = pd.DataFrame(
        {
            "runs": grouped.size(),
            "completed": grouped["status"].apply(lambda s: int((s == "completed").sum())),
            "median_completion_s": grouped["completion_time_s"].median(),
            "median_goodput_mbps": grouped["goodput_bps"].median() / 1e6,
            "median_exit_s": grouped["exit_at_s"].median(),
        }
    )
    return table.round(3)


def time_to_mb(ax, chunks):
    """Seed 000 Fig. 10: median time to deliver each MB, interquartile range shaded."""
    for (link, variant), group in chunks.groupby(["link", "variant"], sort=False):
        q = group.groupby("mb")["time_s"].quantile([0.25, 0.5, 0.75]).unstack()
        label = variant if chunks["link"].nunique() == 1 else f"{link}: {variant}"
        (line,) = ax.plot(q.index, q[0.5], label=label)
        ax.fill_between(q.index, q[0.25], q[0.75], color=line.get_color(), alpha=0.2)
    ax.set_xlabel("data delivered (MB)")
    ax.set_ylabel("time (s)")
    ax.set_title("Time to deliver each MB: median and interquartile range")
    ax.grid(alpha=0.3)
    ax.legend()


def one_run(ax, campaign, run_id):
    path = campaign / "runs" / run_id / "series.csv"
    if not path.is_file():
        fail(f"{path}: no series.csv")
    series = pd.read_csv(path)
    flow = series.loc[series["flow"] == series["flow"].min()]
    ax.plot(flow["time_s"], flow["cwnd_bytes"] / 1e6, label="cwnd")
    ax.plot(flow["time_s"], flow["in_flight_bytes"] / 1e6, label="bytes in flight")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("MB")
    ax.grid(alpha=0.3)
    delivered = ax.twinx()
    delivered.plot(
        flow["time_s"], flow["delivered_bytes"] / 1e6, color="black", linestyle="--", label="delivered"
    )
    delivered.set_ylabel("delivered (MB)")
    ax.set_title(f"One run: {run_id}", fontsize="small")
    lines = ax.get_legend_handles_labels()
    more = delivered.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left")
    return len(series)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("campaign", type=Path, help="campaign directory (holds runs.csv)")
    parser.add_argument("--run", help="run id whose series.csv is drawn (default: the first completed run)")
    parser.add_argument("--out", type=Path, help="figure file (default: CAMPAIGN/analysis.png)")
    args = parser.parse_args()

    runs = load_runs(args.campaign)
    chunks = load_chunks(args.campaign, runs)
    run_id = args.run or runs.loc[runs["status"] == "completed", "run_id"].iloc[0]
    if run_id not in set(runs["run_id"]):
        fail(f"--run {run_id}: not a run of {args.campaign / 'runs.csv'}")

    pd.set_option("display.width", 200)
    print(summary(runs).to_string())

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 9))
    time_to_mb(top, chunks)
    samples = one_run(bottom, args.campaign, run_id)
    fig.tight_layout()
    out = args.out or args.campaign / "analysis.png"
    fig.savefig(out, dpi=100)
    print(f"{len(runs)} runs, {chunks['run_id'].nunique()} with per-MB times, {samples} samples of {run_id}; wrote {out}")


if __name__ == "__main__":
    main()
