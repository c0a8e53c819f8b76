#!/usr/bin/env python3
"""Rebuilds the scorecard's picoquic grid references (crates/lab/campaigns/scorecard/
picoquic-grid.csv) where picoquic is built: the anchor build's picoquic_ct (BBRv3 and CUBIC)
on the grid's lossless points, as `scripts/grid.py run --picoquic` runs them (client
uploads, rates matched by goodput; grid_picoquic.py), cached by point and picoquic commit.
The default set's points first, then the rest, smallest first; the file is rewritten after
each point, so an interrupted run keeps what it measured.

    nice -n 19 scripts/scorecard-picoquic-refs.py OUT/picoquic/build/picoquic_ct [--only-default]
"""

import csv
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import grid_picoquic  # noqa: E402
import grid_points  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
SETS = REPO / "crates/lab/campaigns/scorecard"
OUT = SETS / "picoquic-grid.csv"


def main():
    if len(sys.argv) < 2 or not pathlib.Path(sys.argv[1]).is_file():
        sys.exit("scorecard-picoquic-refs: usage: scorecard-picoquic-refs.py PICOQUIC_CT [--only-default]")
    runner = grid_picoquic.Runner(sys.argv[1], None, grid_picoquic.DEFAULT_CACHE)
    points = [p for p in grid_points.read_points(REPO / "crates/lab/campaigns/grid/points.csv") if p.loss == 0]
    default = set(re.findall(r'link = "grid:(p\d\d)"', (SETS / "default.toml").read_text()))
    order = sorted(points, key=lambda p: (p.point not in default, p.bytes))
    if "--only-default" in sys.argv:
        order = [p for p in order if p.point in default]
    done = {}
    if OUT.exists():
        with open(OUT) as f:
            for r in csv.DictReader(f):
                done[(r["point"], r["test"])] = r
    for p in order:
        for test in grid_picoquic.TESTS:
            if (p.point, test) in done:
                continue
            res = grid_picoquic.load(runner.cache, p, test) or runner.run_one(p, test)
            done[(p.point, test)] = {"point": p.point, "test": test,
                                     "completion_s": "" if res["completion_s"] is None else f"{res['completion_s']:.6f}",
                                     "commit": runner.commit}
            print(f"{p.point} {test} {res['completion_s']}", flush=True)
        tmp = OUT.with_suffix(".tmp")
        with open(tmp, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["point", "test", "completion_s", "commit"], lineterminator="\n")
            w.writeheader()
            for k in sorted(done):
                w.writerow(done[k])
        tmp.rename(OUT)


if __name__ == "__main__":
    main()
