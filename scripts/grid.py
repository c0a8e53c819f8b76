#!/usr/bin/env python3
"""The satellite grids: satquic (and picoquic) on GEO paths drawn by a seed, and satquic
on Starlink-like LEO paths drawn by another (`--kind leo`).

    scripts/grid.py generate [--kind geo|leo] [--seed 30|40] [--satquic BIN]   # points.csv and link files (committed)
    scripts/grid.py run --out DIR [--kind geo|leo] [--satquic BIN] [--variants satellite,bbr3,cubic]
                        [--variant LABEL=CC[;KEY=VALUE...]] [--picoquic PICOQUIC_CT]
                        [--picoquic-cache DIR] [--jobs 2]
    scripts/grid.py explain DIR POINT [--variant satellite] [--satquic BIN]   # where a point's time goes
    scripts/grid.py report DIR                    # the CSV, tables, summary (and heatmaps) again

Every point runs both ways: a download on its link and an upload (`-R`) on its mirror.
Each (point, direction) is one campaign (DIR/campaigns/pNN-down.toml, run by `satquic
campaign run`) holding the chosen variants. picoquic (its simulator, the anchor build's
ANCHOR_* overrides) runs the lossless points as client uploads, with its BBRv3
(`satellite_basic`) and CUBIC (`satellite_cubic`); its results are cached by point and
picoquic commit, since they do not change when satquic does. Run it under `nice -n 19`.
See crates/lab/campaigns/grid/README.md for the definitions and the columns.

The LEO grid (`--kind leo`, crates/lab/campaigns/leo-grid/README.md) has its points in
grid_leo.py and its report in grid_leo_report.py and reuses the rest: one campaign per
point and direction, the same variants, the same time cap rule. Its generation asks the
satquic binary for the presets' tables, the link files and the slots behind each
point's physical limit.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import grid_explain  # noqa: E402
import grid_leo  # noqa: E402
import grid_leo_report  # noqa: E402
import grid_picoquic  # noqa: E402
import grid_points  # noqa: E402
import grid_report  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
GRID_DIR = REPO / "crates/lab/campaigns/grid"
LEO_GRID_DIR = REPO / "crates/lab/campaigns/leo-grid"
DEFAULT_SEED = 30
LEO_SEED = 40  # issue 40
# Known variants: label -> the campaign's [[variant]] keys. Every variant runs with path
# MTU discovery, as the profile and picoquic do, so the physical limit (full-size 1452-byte
# datagrams) is the same for all and they differ in congestion control (and, for the
# profile, ACK frequency and probe timeouts).
VARIANTS = {
    "satellite": {"cc": "satellite"},
    "bbr3": {"cc": "bbr3", "mtu_discovery": True},
    "cubic": {"cc": "cubic", "mtu_discovery": True},
    "bbr": {"cc": "bbr", "mtu_discovery": True},
}
DEFAULT_VARIANTS = "satellite,bbr3,cubic"
LEO_VARIANTS = "satellite,cubic,bbr3,bbr"
DIRECTIONS = ("down", "up")
# A run's virtual time cap: this many times its physical limit, at least MIN_TIME_CAP_S.
TIME_CAP_FACTOR = 4
MIN_TIME_CAP_S = 60
SEED = 1  # the simulation seed of every run (the loss processes draw from it)


def usage(msg):
    print(f"grid.py: {msg}", file=sys.stderr)
    sys.exit(2)


def output_dir(flag, path):
    """`path` as a directory to write into, resolved: an existing directory, or one to make
    whose parent exists (only the last component is made, as satquic's --qlog does). A
    file, a device, or a missing parent is one line and exit 2; nothing is made here."""
    out = pathlib.Path(path).resolve()
    if out.exists() and not out.is_dir():
        usage(f"{flag} {path}: not a directory")
    if not out.exists() and not out.parent.is_dir():
        usage(f"{flag} {path}: its parent {out.parent} does not exist")
    return out


def make_dir(flag, out, *subdirs):
    """Makes `out` (its parent exists: output_dir) and `subdirs` in it; one line and exit 2
    if it cannot (no permission, a read-only file system)."""
    try:
        out.mkdir(exist_ok=True)
        for sub in subdirs:
            (out / sub).mkdir(exist_ok=True)
    except OSError as e:
        usage(f"{flag} {out}: cannot create it: {e.strerror or e}")


class Kind:
    """What differs between the GEO and the LEO grid: where its points live, how they are
    read, the variants run by default and the report."""

    def __init__(self, name):
        leo = name == "leo"
        self.name = name
        self.dir = LEO_GRID_DIR if leo else GRID_DIR
        self.seed = LEO_SEED if leo else DEFAULT_SEED
        self.read_points = grid_leo.read_points if leo else grid_points.read_points
        self.variants = LEO_VARIANTS if leo else DEFAULT_VARIANTS
        self.report = grid_leo_report.report if leo else grid_report.report


def run_kind(out):
    """The kind of a run directory (`kind` file; GEO before the LEO grid existed)."""
    f = pathlib.Path(out) / "kind"
    return f.read_text().strip() if f.exists() else "geo"


def cmd_generate(args):
    kind = Kind(args.kind)
    out = output_dir("--out", args.out or kind.dir)
    seed = kind.seed if args.seed is None else args.seed
    satquic = executable("--satquic", args.satquic)
    make_dir("--out", out, "links")
    for old in (out / "links").glob("*.toml"):
        old.unlink()
    if args.kind == "leo":
        points = grid_leo.generate(seed, grid_leo.Satquic(satquic), out / "links")
        grid_leo.write_points(out / "points.csv", points)
    else:
        points = grid_points.generate(seed, satquic)
        for p in points:
            for mirror in (False, True):
                name = p.point + ("-mirror" if mirror else "")
                (out / "links" / f"{name}.toml").write_text(grid_points.link_toml(p, seed, mirror))
        grid_points.write_points(out / "points.csv", points)
    print(f"{len(points)} points, {2 * len(points)} link files in {out}")


def parse_variants(names, custom):
    """Known variants by name (`satellite,bbr3`) and custom ones, each
    `LABEL=CC[;KEY=VALUE...]` with a campaign [[variant]]'s keys (a cc spec may hold
    commas, so custom variants come one per --variant)."""
    out = {}
    for name in filter(None, (s.strip() for s in names.split(","))):
        if name not in VARIANTS:
            usage(f"unknown variant {name!r}; known: {', '.join(VARIANTS)} (others: --variant LABEL=CC)")
        out[name] = dict(VARIANTS[name])
    for item in custom:
        head, *opts = item.split(";")
        label, eq, cc = (s.strip() for s in head.partition("="))
        if not eq or not label or not cc:
            usage(f"--variant {item!r}: write LABEL=CC[;KEY=VALUE...]")
        keys = {"cc": cc, "mtu_discovery": True}
        for o in opts:
            k, eq, v = (s.strip() for s in o.partition("="))
            if not eq or not k:
                usage(f"--variant {item!r}: {o!r} is not KEY=VALUE")
            keys[k] = {"true": True, "false": False}.get(v, v)
        out[label] = keys
    if not out:
        usage("no variants: give --variants or --variant")
    return out


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v))


def campaign_toml(p, direction, variants, grid_dir=GRID_DIR):
    """The campaign of one point and direction: its link (or mirror), every variant, one
    transfer."""
    upload = direction == "up"
    link = grid_dir / "links" / (p.point + ("-mirror" if upload else "") + ".toml")
    phys = p.phys_up_s if upload else p.phys_down_s
    cap = max(MIN_TIME_CAP_S, int(TIME_CAP_FACTOR * phys) + 1)
    lines = [
        f'name = "grid-{p.point}-{direction}"',
        'mode = "sim"',
        f'time_cap = "{cap}s"',
        f"seed = {SEED}",
        'sender_cap = "none"',
        "",
        "[[link]]",
        f"file = {json.dumps(str(link))}",
        f'label = "{p.point}"',
    ]
    for label, keys in variants.items():
        lines += ["", "[[variant]]", f"label = {json.dumps(label)}"]
        lines += [f"{k} = {toml_value(v)}" for k, v in keys.items()]
    lines += [
        "",
        "[[workload]]",
        f'kind = "{"upload" if upload else "download"}"',
        f"bytes = {p.bytes}",
        f'label = "{direction}"',
    ]
    return "\n".join(lines) + "\n"


def file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def check_binary(out, satquic):
    """A result directory holds one satquic build's runs: campaigns resume finished runs by
    scenario, so a rebuilt satquic would otherwise be credited with the old one's results."""
    stamp = out / "satquic.sha256"
    digest = file_digest(satquic)
    if stamp.exists() and stamp.read_text().strip() != digest:
        usage(f"{out} holds runs of another satquic build ({stamp}); give a new --out")
    stamp.write_text(digest + "\n")


def satquic_task(satquic, toml, run_dir):
    def run():
        t0 = time.monotonic()
        cmd = [str(satquic), "campaign", "run", str(toml), "--out", str(run_dir), "--jobs", "1", "--force"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode not in (0, 1):
            return f"{toml.stem}: satquic exited {r.returncode}: {r.stderr.strip()[-300:]}"
        return f"{toml.stem}: {time.monotonic() - t0:.1f} s"
    return run


def plan_tasks(args, points, variants, out):
    """(estimated cost, description, callable), largest first so two workers finish together."""
    tasks = []
    (out / "campaigns").mkdir(parents=True, exist_ok=True)
    for p in points:
        for direction in args.directions:
            toml = out / "campaigns" / f"{p.point}-{direction}.toml"
            toml.write_text(campaign_toml(p, direction, variants, args.kind.dir))
            cost = len(variants) * (p.bytes + 2e6)
            tasks.append((cost, toml.stem, satquic_task(args.satquic, toml, out / "satquic" / toml.stem)))
    if args.pq:
        pq = args.pq
        for p in points:
            if p.loss > 0:
                continue
            for test in grid_picoquic.TESTS:
                if not pq.cached(p, test):
                    tasks.append((2.5 * (p.bytes + 2e6), f"picoquic {test} {p.point}", pq.task(p, test)))
        (out / "picoquic.json").write_text(json.dumps(pq.describe(), indent=1) + "\n")
    tasks.sort(key=lambda t: -t[0])
    return tasks


def check_campaign(satquic, p, direction, variants, grid_dir=GRID_DIR):
    """`satquic campaign plan` refuses a bad variant (a cc spec, a key) in one line: say it
    once here, before anything is written into --out, rather than once per campaign."""
    with tempfile.TemporaryDirectory(prefix="grid-check-") as d:
        toml = pathlib.Path(d) / f"{p.point}-{direction}.toml"
        toml.write_text(campaign_toml(p, direction, variants, grid_dir))
        try:
            r = subprocess.run([str(satquic), "campaign", "plan", str(toml)], capture_output=True,
                               text=True)
        except OSError as e:  # a file that is no program (exec format error)
            usage(f"--satquic {satquic}: cannot run it: {e.strerror or e}")
    if r.returncode != 0:
        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "satquic campaign plan failed"
        usage(why.replace(str(toml), f"the campaign of {p.point}-{direction}"))


def executable(flag, path):
    """`path` resolved, if it is an executable file; else one line and exit 2."""
    resolved = pathlib.Path(path).resolve()
    if not resolved.is_file():
        usage(f"{flag} {path}: no such file")
    if not os.access(resolved, os.X_OK):
        usage(f"{flag} {path}: not executable")
    return resolved


def picoquic_runner(args):
    """picoquic's runner for --picoquic (a file), its --picoquic-src and its cache (made if
    missing: it is kept across result directories); one line and exit 2 if they are not."""
    binary = executable("--picoquic", args.picoquic)
    if args.picoquic_src and not pathlib.Path(args.picoquic_src).is_dir():
        usage(f"--picoquic-src {args.picoquic_src}: not a directory")
    try:
        return grid_picoquic.Runner(binary, args.picoquic_src, args.picoquic_cache)
    except OSError as e:
        usage(f"--picoquic-cache {args.picoquic_cache}: cannot use it: {e.strerror or e}")


def check_run_args(args):
    """Every argument of `run`, checked before anything is written: the result directory,
    the binaries, the directions, the workers, the variants and the points. Returns the
    result directory, the variants and the points."""
    out = output_dir("--out", args.out)
    args.kind = Kind(args.kind)
    if (out / "points.csv").exists() and run_kind(out) != args.kind.name:
        usage(f"--out {args.out}: it holds a {run_kind(out)} grid run; give a new --out")
    args.satquic = executable("--satquic", args.satquic)
    args.pq = None
    if args.picoquic and args.kind.name != "geo":
        usage("--picoquic runs on the GEO grid only (picoquic's simulator has no LEO link)")
    if args.picoquic:
        args.pq = picoquic_runner(args)
    args.directions = [d.strip() for d in args.directions.split(",") if d.strip()]
    if not args.directions or any(d not in DIRECTIONS for d in args.directions):
        usage(f"--directions takes {' and '.join(DIRECTIONS)}")
    if args.jobs < 1:
        usage("--jobs must be at least 1")
    variants = parse_variants(args.kind.variants if args.variants is None else args.variants, args.variant)
    points = args.kind.read_points(args.kind.dir / "points.csv")
    if args.points:
        wanted = set(args.points.split(","))
        points = [p for p in points if p.point in wanted]
        if not points:
            usage(f"--points {args.points}: no such point")
    check_campaign(args.satquic, points[0], args.directions[0], variants, args.kind.dir)
    return out, variants, points


def cmd_run(args):
    out, variants, points = check_run_args(args)
    make_dir("--out", out)
    check_binary(out, args.satquic)
    (out / "kind").write_text(args.kind.name + "\n")
    shutil.copyfile(args.kind.dir / "points.csv", out / "points.csv")
    (out / "variants.json").write_text(json.dumps(variants, indent=1) + "\n")
    tasks = plan_tasks(args, points, variants, out)
    t0 = time.monotonic()
    print(f"{len(tasks)} tasks on {args.jobs} workers", file=sys.stderr)
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(fn) for _, _, fn in tasks]
        for i, f in enumerate(concurrent.futures.as_completed(futures), 1):
            print(f"[{i}/{len(tasks)} {time.monotonic() - t0:.0f} s] {f.result()}", file=sys.stderr)
    wall = time.monotonic() - t0
    # satquic's and picoquic's processes, and this one's own (parsing picoquic's qlogs)
    cpu = sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, (resource.RUSAGE_CHILDREN, resource.RUSAGE_SELF)))
    (out / "wall.json").write_text(json.dumps({"wall_s": wall, "cpu_s": cpu, "jobs": args.jobs, "tasks": len(tasks)}) + "\n")
    print(f"grid run: {wall:.0f} s wall, {cpu:.0f} s CPU", file=sys.stderr)
    args.kind.report(out)


def run_dir(path):
    """A grid run's result directory (it holds points.csv); else one line and exit 2."""
    out = pathlib.Path(path)
    if not (out / "points.csv").is_file():
        usage(f"{out}: no points.csv (not a grid run directory)")
    return out


def cmd_report(args):
    out = run_dir(args.dir)
    Kind(run_kind(out)).report(out)


def cmd_explain(args):
    out = run_dir(args.dir)
    if run_kind(out) != "geo":
        usage(f"{args.dir}: explain reads GEO grid runs (its window analysis assumes a constant path)")
    grid_explain.explain(out, args.point, args.variant, lambda: executable("--satquic", args.satquic))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    kinds = ("geo", "leo")
    g = sub.add_parser("generate", help="draw the points and write their link files")
    g.add_argument("--kind", choices=kinds, default="geo")
    g.add_argument("--seed", type=int, help=f"default {DEFAULT_SEED} (geo), {LEO_SEED} (leo)")
    g.add_argument("--out", help="default: the kind's folder under crates/lab/campaigns")
    g.add_argument("--satquic", default=str(REPO / "target/release/satquic"), help="the binary asked for the limits (and leo: the tables)")
    r = sub.add_parser("run", help="run the grid and write the report")
    r.add_argument("--kind", choices=kinds, default="geo")
    r.add_argument("--out", required=True, help="result directory (one per satquic build)")
    r.add_argument("--satquic", default=str(REPO / "target/release/satquic"))
    r.add_argument("--variants",
                   help=f"comma-separated, of {', '.join(VARIANTS)} (default {DEFAULT_VARIANTS}, leo {LEO_VARIANTS}; '' for none)")
    r.add_argument("--variant", action="append", default=[], metavar="LABEL=CC[;KEY=VALUE...]",
                   help="another variant: a cc spec and campaign [[variant]] keys (repeatable)")
    r.add_argument("--directions", default="down,up")
    r.add_argument("--points", help="only these points (p00,p07,...)")
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--picoquic", help="picoquic_ct of the anchor build (none: satquic only)")
    r.add_argument("--picoquic-src", help="picoquic's source folder (default: the binary's ../)")
    r.add_argument("--picoquic-cache", default=str(grid_picoquic.DEFAULT_CACHE))
    r.set_defaults(fn=cmd_run)
    g.set_defaults(fn=cmd_generate)
    s = sub.add_parser("report", help="write the CSV, tables, summary and heatmaps of a run again")
    s.add_argument("dir")
    s.set_defaults(fn=cmd_report)
    e = sub.add_parser("explain", help="where a point's time goes: window, queue and deficit per round trip")
    e.add_argument("dir")
    e.add_argument("point")
    e.add_argument("--variant", default="satellite")
    e.add_argument("--satquic", default=str(REPO / "target/release/satquic"), help="the binary asked for the limit")
    e.set_defaults(fn=cmd_explain)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    main()
