#!/usr/bin/env python3
"""Regenerates BENCHMARKS.md's simulator tables, so that they cannot drift from the code.

Usage: scripts/bench-tables.py [--check] [--bin PATH] [--only NAME,...] [--jobs N] [--file F]
                               [--work DIR] [--list]

Every table of simulator numbers in BENCHMARKS.md sits between two markers,

    <!-- table: NAME -->
    ...the command that produced it, then the table...
    <!-- /table -->

and is written by this script: it runs the commands (`satquic sim`, `satquic campaign run`
on the specs in scripts/bench-tables/, `satquic calibrate`) with the release binary and
rewrites what is between the markers. Simulations are deterministic (virtual time, seeded
randomness): the same binary gives the same tables on any machine, so a difference means
the code changed a number. quinn's own `bbr` is left out of every table: it draws from the
thread RNG. Real-time and peer numbers are not here: they stay in BENCHMARKS.md as measured.

--check regenerates into memory, writes nothing, and exits 1 naming the tables that differ
(or are missing). Simulations run under `nice -n 19`, at most --jobs (default and at most 2)
at a time; progress goes to stderr. Build the binary first:

    nice -n 19 cargo build --release -p satquic

--only regenerates some tables, --list names them all, and --work DIR keeps the runs and
reuses the finished ones on the next call (while editing the tables' code; a changed binary
or campaign spec runs again). A full run takes about 4 minutes of CPU.

Bad arguments, a missing binary or an unknown marker: one line on stderr and exit code 2.
"""
import argparse
import concurrent.futures
import csv
import dataclasses
import hashlib
import json
import os
import pathlib
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SPECS = "scripts/bench-tables"
MAX_JOBS = 2
MARKER = re.compile(r"<!-- table: ([\w-]+) -->\n(.*?)<!-- /table -->", re.S)


class UsageError(Exception):
    """Bad input: one line on stderr, exit code 2."""


# --- What runs ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sim:
    """One `satquic sim ... -J`; with `out`, its run directories are kept for the table."""

    args: tuple
    out: bool = False

    def argv(self, out_dir):
        extra = ["--out", str(out_dir)] if self.out else []
        return ["sim", *self.args, "--jobs", "1", "-J", *extra]

    def label(self):
        return "satquic sim " + shlex.join(self.args)


@dataclasses.dataclass(frozen=True)
class Campaign:
    """`satquic campaign run SPEC`; the table reads its runs.csv and run directories."""

    spec: str

    def argv(self, out_dir, jobs):
        return ["campaign", "run", str(ROOT / self.spec), "--out", str(out_dir), "--jobs", str(jobs)]

    def label(self):
        return f"satquic campaign run {self.spec}"

    def key(self):
        return self.label() + "\n" + (ROOT / self.spec).read_text()


@dataclasses.dataclass(frozen=True)
class Calibrate:
    """`satquic calibrate --link ...`; the table reads calibration.md."""

    links: tuple

    def argv(self, out_dir, jobs):
        links = [a for link in self.links for a in ("--link", link)]
        return ["calibrate", *links, "--out", str(out_dir), "--jobs", str(jobs)]

    def label(self):
        return "satquic calibrate " + " ".join(f"--link {link}" for link in self.links)


@dataclasses.dataclass
class SimResult:
    json: dict
    dir: pathlib.Path


@dataclasses.dataclass
class CampaignResult:
    rows: list
    dir: pathlib.Path

    def row(self, link, variant, workload=None):
        for r in self.rows:
            if r["link"] == link and r["variant"] == variant and workload in (None, r["workload"]):
                return r
        raise KeyError(f"no run {link} / {variant} / {workload} in {self.dir}")


class Runner:
    """Runs each task once, simulations in parallel, under nice; progress on stderr.

    Each task writes into its own directory under `work`, named after its command; a task
    whose directory holds a finished result (kept with --work) is not run again."""

    def __init__(self, binary, jobs, work):
        self.binary, self.jobs, self.work = binary, jobs, pathlib.Path(work)
        self.results, self.done, self.total = {}, 0, 0
        self.lock = threading.Lock()

    def run_all(self, tasks):
        tasks = list(dict.fromkeys(tasks))
        self.total = len(tasks)
        sims = [t for t in tasks if isinstance(t, Sim)]
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            for task, result in zip(sims, pool.map(self.run_sim, sims)):
                self.results[task] = result
        for task in tasks:
            if not isinstance(task, Sim):
                self.results[task] = self.run_heavy(task)
        return self.results

    def task_dir(self, task):
        key = task.key() if hasattr(task, "key") else task.label()
        stat = self.binary.stat()  # a rebuilt binary runs everything again
        binary = f"{self.binary} {stat.st_size} {stat.st_mtime_ns}"
        digest = hashlib.sha1(f"{binary}\n{key}".encode()).hexdigest()[:16]
        path = self.work / digest
        path.mkdir(parents=True, exist_ok=True)
        return path

    def exec(self, task, argv, done):
        if done.exists():
            with self.lock:
                self.done += 1
            return done.read_text()
        started = time.monotonic()
        proc = subprocess.run(["nice", "-n", "19", str(self.binary), *argv], cwd=ROOT,
                              capture_output=True, text=True)
        # Exit code 1 is a run that did not finish within its time cap: still a row.
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{task.label()}: exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
        with self.lock:
            self.done += 1
            print(f"bench-tables: [{self.done}/{self.total}] {task.label()} "
                  f"({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)
        done.write_text(proc.stdout)
        return proc.stdout

    def run_sim(self, task):
        path = self.task_dir(task)
        out_dir = path / "sim"
        stdout = self.exec(task, task.argv(out_dir), path / "stdout")
        return SimResult(json.loads(stdout), out_dir)

    def run_heavy(self, task):
        path = self.task_dir(task)
        out_dir = path / "out"
        self.exec(task, task.argv(out_dir, self.jobs), path / "stdout")
        if isinstance(task, Calibrate):
            return (out_dir / "calibration.md").read_text()
        with open(out_dir / "runs.csv", newline="") as f:
            return CampaignResult(list(csv.DictReader(f)), out_dir)


# --- Formatting -----------------------------------------------------------------------


def secs(x):
    return "-" if x is None or x == "" else f"{float(x):.2f}"


def count(n):
    return f"{int(float(n)):,}"


def mbps(bps):
    return f"{float(bps) / 1e6:.2f}"


def md_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def fenced(commands):
    return "```\n" + "\n".join(commands) + "\n```"


def run_of(result, i=0):
    return result.json["per_run"][i]


def time_or_rate(run):
    """Completion time, or '-' with the goodput over the cap for a run that did not finish."""
    if run["status"] == "completed":
        return secs(run["completion_time_s"])
    return f"- ({mbps(run['goodput_bps'])} Mbit/s)"


def runs_of(result, variant):
    return [r for r in result.json["per_run"] if r["variant"] == variant]


def csv_time(row, key="completion_time_s"):
    if row["status"] != "completed":
        return f"- ({mbps(row['goodput_bps'])} Mbit/s)"
    return secs(row[key])


# --- The tables -----------------------------------------------------------------------


@dataclasses.dataclass
class Table:
    name: str
    commands: list
    tasks: list
    render: object  # (results) -> markdown table


TABLES = []


def table(name, commands, tasks):
    def register(render):
        TABLES.append(Table(name, commands, tasks, render))
        return render
    return register


# picoquic's satellite tests (picoquictest/satellite_test.c) and three of the seeds' rows.
# picoquic's numbers come from its own simulator (/work/shared/anchors/README.md, picoquic's
# head in November 2026): measured there, not by this script.
SUITE = [
    # name, link, bytes, extra flags, picoquic first, picoquic seeded
    ("basic", "sat-250-3", "100M", ("-R",), "5.46 (BBRv3), 6.12 (CUBIC)", "4.86 (BBRv3), 4.66 (CUBIC)"),
    ("jitter 3 ms", "sat-250-3:jitter=3ms", "100M", ("-R",), "5.50", ""),
    ("loss 1/64", "sat-250-3:loss=64", "100M", ("-R",), "6.63", ""),
    ("medium", "sat-50-10", "100M", ("-R",), "17.72", ""),
    ("preemptive_fc", "sat-20-2:loss=64", "10M", ("-R", "--rwnd", "750K"), "19.10", ""),
    ("qir-sat", "qir-sat", "10MiB", (), "", ""),
    ("qir-satloss", "qir-satloss", "10MiB", (), "", ""),
    ("geo-viasat", "geo-viasat", "200M", (), "", ""),
]


def suite_args(link, size, flags):
    return ("--link", link, "-n", size, *flags)


def suite_command(row):
    _, link, size, flags, _, _ = row
    return shlex.join(suite_args(link, size, flags))


# The profile with every loss answered as RFC 9438 does (its loss response off; the profile
# of issue 38): the column beside the profile on every row (docs/conformance.md).
LOSSY = "satellite+loss-filter:off"
SUITE_TASKS = {
    row[0]: (Sim(suite_args(*row[1:4]) + ("--cc", "satellite")),
             Sim(suite_args(*row[1:4]) + ("--cc", "satellite", "--resume")),
             Sim(suite_args(*row[1:4]) + ("--cc", LOSSY)),
             Sim(suite_args(*row[1:4]) + ("--cc", LOSSY, "--resume")),
             Sim(suite_args(*row[1:4]) + ("--cc", "cubic", "--cc", "bbr3")))
    for row in SUITE
}


@table("picoquic-suite",
       ["satquic sim ROW --cc satellite -J            # first connection",
        "satquic sim ROW --cc satellite --resume -J   # resumed 10 s later (0-RTT, token, Careful Resume)",
        f"satquic sim ROW --cc {LOSSY} [--resume] -J",
        "satquic sim ROW --cc cubic --cc bbr3 -J"],
       [t for tasks in SUITE_TASKS.values() for t in tasks])
def picoquic_suite(results):
    rows = []
    for row in SUITE:
        name, _, _, _, pico, pico_seeded = row
        first, resumed, lossy, lossy_resumed, others = (results[t] for t in SUITE_TASKS[name])
        f = run_of(first)
        rows.append([
            name, f"`{suite_command(row)}`", pico, pico_seeded,
            f"**{time_or_rate(f)}**, {count(f['packets_lost'])} lost, {f['exit_class']}",
            time_or_rate(run_of(resumed)),
            f"{time_or_rate(run_of(lossy))} / {time_or_rate(run_of(lossy_resumed))}",
            time_or_rate(runs_of(others, "cubic")[0]), time_or_rate(runs_of(others, "bbr3")[0]),
        ])
    return md_table(["scenario", "ROW", "picoquic", "picoquic seeded", "`satellite`: s, lost, SEARCH exit",
                     "`satellite` resumed", f"`{LOSSY}` (every loss answered): first / resumed", "cubic", "bbr3"], rows)


SEEDS_ROWS = [row for row in SUITE if row[4]]


def seeds_cc(row):
    """The profile, on every row (it is the setting for lossy paths too)."""
    del row
    return "satellite"


SEEDS_TASKS = {row[0]: Sim(suite_args(*row[1:4]) + ("--cc", seeds_cc(row), "--runs", "8")) for row in SEEDS_ROWS}


@table("picoquic-suite-seeds", ["satquic sim ROW --cc CC --runs 8 -J   # seeds 1-8"],
       list(SEEDS_TASKS.values()))
def picoquic_suite_seeds(results):
    rows = []
    for row in SEEDS_ROWS:
        name, pico = row[0], row[4]
        runs = results[SEEDS_TASKS[name]].json["per_run"]
        times = [r["completion_time_s"] for r in runs if r["status"] == "completed"]
        best_pico = float(pico.split()[0])
        slower = sum(t > best_pico for t in times) + len(runs) - len(times)
        span = f"{secs(min(times))}-{secs(max(times))}" if times else "none finished"
        median = secs(statistics.median(times)) if times else "-"
        rows.append([name, f"`{suite_command(row)}`", f"`{seeds_cc(row)}`", pico, median, span,
                     f"{slower} of {len(runs)}"])
    return md_table(["scenario", "ROW", "CC", "picoquic", "median", "range", "runs slower than picoquic"], rows)


STARTUP_SPECS = [f"{SPECS}/startup-up.toml", f"{SPECS}/startup-down-10mib.toml", f"{SPECS}/startup-down-geo.toml"]
STARTUP_COLUMNS = [
    # spec, link, header
    (0, "sat-250-3", "sat-250-3 ul 100 MB"),
    (0, "sat-250-3:jitter=3ms", "jitter 3 ms ul 100 MB"),
    (0, "sat-50-10", "sat-50-10 ul 100 MB"),
    (1, "qir-sat", "qir-sat 10 MiB"),
    (1, "thesis-asym-99", "thesis-asym-99 10 MiB"),
    (2, "geo-viasat", "geo-viasat 100 MB"),
    (2, "geo-viasat-bod", "geo-viasat-bod 100 MB"),
]
STARTUP_VARIANTS = [
    ("profile", "`satellite`, every part"),
    ("doubling", "without `+growth:x=3`: slow start doubles per round trip"),
    ("growth-7x", "`+growth:rtt` (picoquic's RTT-scaled growth, 7x at 600 ms) instead of x3"),
    ("no-floor", "without `+floor:iw=15360,max-rtt=1000`"),
    ("no-jump", "without `+jump:cap=1.5,bound,validate`"),
    ("jump-picoquic", "`+jump` alone: picoquic's rule, no bound, no cap"),
    ("jump-unvalidated", "`+jump:cap=1.5,bound`: one jump to the bound, not checked against the ACK clock before the second"),
    ("no-burst", "without `+burst:min=65536,time=10`: quinn-proto's pacing in slow start"),
    ("no-retreat", "without `+retreat`: the first reduction from the window, not from what was delivered"),
    ("ack-fixed", "ACK frequency `16:25ms`, not following the window"),
    ("ack-every-2nd", "no ACK_FREQUENCY request: an ACK every 2nd packet"),
    ("mtu-1200", "no PLPMTUD: 1,200-byte datagrams"),
    ("rwnd-autotune", "stream window auto-tuned from 1.25 MB (`apply_satellite` for quinn) instead of 256 MiB"),
    ("cubic+search", "none of it: `cubic+search`, quinn's defaults"),
]


@table("startup-mechanisms", [f"satquic campaign run {s} --out DIR --jobs 2" for s in STARTUP_SPECS],
       [Campaign(s) for s in STARTUP_SPECS])
def startup_mechanisms(results):
    campaigns = [results[Campaign(s)] for s in STARTUP_SPECS]
    rows = []
    for variant, what in STARTUP_VARIANTS:
        cells = []
        for spec, link, _ in STARTUP_COLUMNS:
            r = campaigns[spec].row(link, variant)
            cells.append(f"{csv_time(r)} ({count(r['packets_lost'])})")
        rows.append([f"`{variant}`", what, *cells])
    return md_table(["variant", "what changes", *(c[2] for c in STARTUP_COLUMNS)], rows)


RWND_SPEC = "crates/lab/campaigns/receive-windows.toml"
RWND_VARIANTS = ["quinn-default-1.25MB", "autotune", "fixed-256MiB"]


@table("receive-windows", [f"satquic campaign run {RWND_SPEC} --out DIR --jobs 2"], [Campaign(RWND_SPEC)])
def receive_windows(results):
    c = results[Campaign(RWND_SPEC)]
    rows = []
    for link in ["geo-viasat", "qir-sat", "qir-terrestrial", "leo"]:
        for workload in ["dl10MiB", "dl100MB"]:
            cells = []
            for variant in RWND_VARIANTS:
                r = c.row(link, variant, workload)
                cell = f"{csv_time(r)} ({count(r['packets_lost'])} lost)"
                if variant == "autotune":
                    summary = json.loads((c.dir / "runs" / r["run_id"] / "summary.json").read_text())
                    window = summary["flows"][0]["stream_receive_window_end"]
                    cell += f", window {float(window) / 1e6:.2f} MB at the end"
                cells.append(cell)
            rows.append([f"{link} {workload[2:]}", *cells])
    return md_table(["link, download", "quinn's default 1.25 MB", "auto-tuned from 1.25 MB", "fixed 256 MiB"], rows)


RESUME_SPECS = [f"{SPECS}/resume-up.toml", f"{SPECS}/resume-down.toml"]
RESUME_COLUMNS = [
    (0, "sat-250-3", "sat-250-3 ul 100 MB"),
    (0, "sat-250-3:loss=64", "loss 1/64 ul 100 MB"),
    (1, "qir-sat", "qir-sat 10 MiB"),
    (1, "qir-satloss", "qir-satloss 10 MiB"),
    (1, "geo-viasat", "geo-viasat 10 MiB"),
]
RESUME_VARIANTS = [
    ("profile", "`satellite`: `+cr:ss-cap=1,jump-on-confirm`; every loss heard in Reconnaissance and the Unvalidated Phase, in the Validating Phase those the loss response answers (`loss-filter:cr=validating`)"),
    ("cr-no-ss-cap", "`+cr:jump-on-confirm`: normal congestion control after the validated jump"),
    ("cr-deferred-jump", "`+cr:ss-cap=1`: the jump deferred until the window is full"),
    ("cr-rfc", "`+cr` (the same as no `+cr`): RFC 9959's defaults, the jump deferred until the window is full"),
    ("no-cr", "`+cr:off`: no Careful Resume, 0-RTT and the token only"),
    ("every-loss", "`satellite+loss-filter:off`: every loss answered (RFC 9438's response), and heard by Careful Resume in every phase"),
    ("validating-hears-all", "`satellite+loss-filter`: isolated losses tolerated, but Careful Resume hears every loss in every phase (Safe Retreat in the Validating Phase too)"),
    ("loss-filter-cr", "`satellite+loss-filter:cr`: Careful Resume hears no tolerated loss, in any phase (not RFC 9959 Sec. 3.3)"),
    ("probe-ping", "probe timeouts send a PING (quinn-proto without patch 11's option)"),
]


@table("resume-options", [f"satquic campaign run {s} --out DIR --jobs 2" for s in RESUME_SPECS],
       [Campaign(s) for s in RESUME_SPECS])
def resume_options(results):
    campaigns = [results[Campaign(s)] for s in RESUME_SPECS]
    first = [campaigns[spec].row(link, "profile") for spec, link, _ in RESUME_COLUMNS]
    rows = [["first connection", "`satellite`", *(csv_time(r, "first_completion_time_s") for r in first)]]
    for variant, what in RESUME_VARIANTS:
        cells = []
        for spec, link, _ in RESUME_COLUMNS:
            r = campaigns[spec].row(link, variant)
            cells.append(f"{csv_time(r)} ({count(r['packets_lost'])})")
        rows.append([f"resumed, `{variant}`", what, *cells])
    return md_table(["connection", "variant", *(c[2] for c in RESUME_COLUMNS)], rows)


LOSS_CCS = ["cubic", "cubic+rollback", "cubic+loss-filter", "bbr3", "satellite", LOSSY,
            "satellite+loss-filter:rule=round,cr=validating", "satellite+loss-filter:rule=queue,cr=validating"]
LOSS_ROWS = [
    ("geo-viasat:plr=0.0001", "100M", ()),
    ("geo-viasat:plr=0.001", "100M", ()),
    ("geo-viasat:plr=0.01", "100M", ()),
    ("geo-viasat:plr=0.05", "100M", ()),
    ("geo-viasat:plr=0.1", "100M", ()),
    ("qir-satloss", "10MiB", ()),
    ("thesis-sat:plr=0.001", "20MB", ()),
    ("thesis-sat:plr=0.01", "20MB", ()),
    ("sat-250-3:loss=64", "100M", ("-R",)),
]
LOSS_TASKS = {row: Sim(suite_args(*row) + tuple(a for cc in LOSS_CCS for a in ("--cc", cc))) for row in LOSS_ROWS}


@table("random-loss", ["satquic sim --link LINK -n SIZE [-R] " + " ".join(f"--cc {cc}" for cc in LOSS_CCS) + " -J"],
       list(LOSS_TASKS.values()))
def random_loss(results):
    rows = []
    for row in LOSS_ROWS:
        res = results[LOSS_TASKS[row]]
        cells = []
        for cc in LOSS_CCS:
            r = runs_of(res, cc)[0]
            cells.append(f"{time_or_rate(r)} ({count(r['packets_lost'])})")
        rows.append([f"`{shlex.join(suite_args(*row)[1:])}`", *cells])
    return md_table(["LINK -n SIZE", *(f"`{cc}`" for cc in LOSS_CCS)], rows)


FAIR_LINKS = ["thesis-sat", "thesis-sat:plr=0.001", "qir-satloss"]
FAIR_PAIRS = ["cubic+loss-filter", "cubic+rollback", "cubic"]
FAIR_TASKS = {(link, cc): Sim(("--link", link, "--cc", cc, "--cc", "cubic", "--mix", "-n", "30M", "-t", "180"))
              for link in FAIR_LINKS for cc in FAIR_PAIRS}


@table("random-loss-fairness", ["satquic sim --link LINK --cc CC --cc cubic --mix -n 30M -t 180 -J"],
       list(FAIR_TASKS.values()))
def random_loss_fairness(results):
    rows = []
    for link in FAIR_LINKS:
        cells = []
        for cc in FAIR_PAIRS:
            r = run_of(results[FAIR_TASKS[(link, cc)]])
            a, b = (flow["goodput_bps"] for flow in r["flows"])
            capped = "" if all(f["status"] == "completed" for f in r["flows"]) else ", not all done in 180 s"
            cells.append(f"{mbps(a)} / {mbps(b)} (JFI {r['jain_index']:.2f}{capped})")
        rows.append([link, *cells])
    return md_table(["LINK", *(f"`{cc}` / `cubic`" for cc in FAIR_PAIRS)], rows)


BBR3_ROWS = [
    ("qir-sat", "10MiB", ()),
    ("qir-satloss", "10MiB", ()),
    ("thesis-sat:plr=0.001", "20MB", ()),
    ("thesis-sat:plr=0.01", "20MB", ()),
    ("geo-viasat", "200M", ()),
    ("sat-250-3", "100M", ("-R",)),
]
BBR3_TASKS = {row: Sim(suite_args(*row) + ("--cc", "bbr3", "--cc", "cubic")) for row in BBR3_ROWS}


@table("bbr3", ["satquic sim --link LINK -n SIZE [-R] --cc bbr3 --cc cubic -J"], list(BBR3_TASKS.values()))
def bbr3(results):
    rows = []
    for row in BBR3_ROWS:
        res = results[BBR3_TASKS[row]]
        cells = []
        for cc in ["bbr3", "cubic"]:
            r = runs_of(res, cc)[0]
            cells.append(f"{time_or_rate(r).split(' (')[0]} / {mbps(r['goodput_bps'])} / {count(r['packets_lost'])}")
        rows.append([f"`{shlex.join(suite_args(*row)[1:])}`", *cells])
    return md_table(["LINK -n SIZE", "bbr3: s / Mbit/s / lost", "cubic: s / Mbit/s / lost"], rows)


BBR3_LONG = "bbr3:floor,quanta,jump,long-probe-rtt"
BBR3_LONG_ACK = ("--ack-freq", "16:25ms:cwnd/8")
BBR3_LONG_ROWS = [
    ("sat-250-3", "100M", ("-R",), "5.46"),
    ("sat-250-3:jitter=3ms", "100M", ("-R",), "5.50"),
    ("sat-250-3:loss=64", "100M", ("-R",), "6.63"),
    ("sat-50-10", "100M", ("-R",), "17.72"),
    ("sat-20-2:loss=64", "10M", ("-R", "--rwnd", "750K"), "19.10"),
    ("qir-sat", "10MiB", (), ""),
    ("qir-satloss", "10MiB", (), ""),
    ("geo-viasat", "200M", (), ""),
]
BBR3_LONG_TASKS = {(row, ack): Sim(suite_args(*row[:3]) + ("--cc", BBR3_LONG) + ack)
                   for row in BBR3_LONG_ROWS for ack in [(), BBR3_LONG_ACK]}


@table("bbr3-long-suite", [f"satquic sim ROW --cc {BBR3_LONG} [--ack-freq 16:25ms:cwnd/8] -J"],
       list(BBR3_LONG_TASKS.values()))
def bbr3_long_suite(results):
    rows = []
    for row in BBR3_LONG_ROWS:
        cells = []
        for ack in [(), BBR3_LONG_ACK]:
            r = runs_of(results[BBR3_LONG_TASKS[(row, ack)]], BBR3_LONG)[0]
            cells.append(f"{time_or_rate(r)} / {count(r['packets_lost'])}")
        rows.append([f"`{shlex.join(suite_args(*row[:3]))}`", row[3], *cells])
    return md_table(["ROW", "picoquic BBRv3", "aids", "aids + ACK frequency"], rows)


STEADY_LINKS = ["thesis-sat", "thesis-sat:plr=0.001", "thesis-sat:plr=0.01"]
STEADY_TASKS = {link: Sim(("--link", link, "--cc", "bbr3", "-n", "1G", "-t", "60", "--runs", "8"), out=True)
                for link in STEADY_LINKS}
STEADY_FROM_S, STEADY_TO_S, THESIS_RATE_BPS = 30.0, 60.0, 20e6


def delivered_at(series_rows, t):
    """Bytes flow 0 had delivered by time t: the last sample at or before t."""
    return max((int(r["delivered_bytes"]) for r in series_rows
                if r["flow"] == "0" and float(r["time_s"]) <= t), default=0)


def steady_goodput_bps(run_dir):
    with open(run_dir / "series.csv", newline="") as f:
        series = list(csv.DictReader(f))
    delivered = delivered_at(series, STEADY_TO_S) - delivered_at(series, STEADY_FROM_S)
    return delivered * 8 / (STEADY_TO_S - STEADY_FROM_S)


@table("bbr3-steady", ["satquic sim --link LINK --cc bbr3 -n 1G -t 60 --runs 8 --out DIR -J   # seeds 1-8",
                       "# goodput over seconds 30-60: delivered_bytes of DIR/runs/*/series.csv"],
       list(STEADY_TASKS.values()))
def bbr3_steady(results):
    rows = []
    for link in STEADY_LINKS:
        res = results[STEADY_TASKS[link]]
        with open(res.dir / "runs.csv", newline="") as f:
            by_seed = {int(r["seed"]): steady_goodput_bps(res.dir / "runs" / r["run_id"]) for r in csv.DictReader(f)}
        values = [by_seed[s] for s in sorted(by_seed)]
        mean = statistics.fmean(values)
        rows.append([link, " ".join(mbps(v) for v in values), f"{mbps(mean)} ({100 * mean / THESIS_RATE_BPS:.1f} %)",
                     f"{sum(v < 0.8 * THESIS_RATE_BPS for v in values)} of {len(values)}"])
    return md_table(["LINK", "seeds 1-8, Mbit/s", "mean (of 20 Mbit/s)", "below 80 %"], rows)


FLOWS_CASES = [
    ("bbr3", "together", ()),
    ("bbr3", "second 10 s later", ("--stagger", "10s")),
    ("cubic", "second 10 s later", ("--stagger", "10s")),
]
FLOWS_TASKS = {case: Sim(("--link", "thesis-sat", "--cc", case[0], "--flows", "2", *case[2], "--runs", "3",
                          "-n", "100M", "-t", "60")) for case in FLOWS_CASES}


@table("bbr3-flows", ["satquic sim --link thesis-sat --cc CC --flows 2 [--stagger 10s] --runs 3 -n 100M -t 60 -J"],
       list(FLOWS_TASKS.values()))
def bbr3_flows(results):
    rows = []
    for case in FLOWS_CASES:
        for r in results[FLOWS_TASKS[case]].json["per_run"]:
            a, b = (flow["goodput_bps"] for flow in r["flows"])
            rows.append([case[0], case[1], r["seed"], f"{r['jain_index']:.3f}", f"{mbps(a)} / {mbps(b)}"])
    return md_table(["cc", "start", "seed", "Jain's index", "goodputs, Mbit/s"], rows)


QUEUE_CCS = ["bbr3", "bbr3:pacing=window", "cubic"]
QUEUE_TASK = Sim(("--link", "thesis-sat:buffer=4", *(a for cc in QUEUE_CCS for a in ("--cc", cc)), "-n", "60MB"),
                 out=True)
QUEUE_FROM_S, THESIS_BDP_BYTES = 12.0, 1.5e6


@table("bbr3-queue", [QUEUE_TASK.label() + " --out DIR -J",
                      "# queue: queue_bytes of DIR/runs/*/series.csv from 12 s on (after Startup and Drain)"],
       [QUEUE_TASK])
def bbr3_queue(results):
    res = results[QUEUE_TASK]
    with open(res.dir / "runs.csv", newline="") as f:
        runs = list(csv.DictReader(f))
    rows = []
    for r in runs:
        with open(res.dir / "runs" / r["run_id"] / "series.csv", newline="") as f:
            queue = [int(x["queue_bytes"]) for x in csv.DictReader(f) if float(x["time_s"]) >= QUEUE_FROM_S]
        mean = statistics.fmean(queue)
        rows.append([f"`{r['variant']}`", csv_time(r), count(r["packets_lost"]),
                     f"{mean / 1e6:.2f} MB ({mean / THESIS_BDP_BYTES:.2f} BDP)", f"{max(queue) / 1e6:.2f} MB"])
    return md_table(["cc", "completion s", "packets lost", "mean queue", "largest queue"], rows)


GEO_CCS = ["newreno:loss-reduction=0.7", "newreno:loss-reduction=0.7+search:v2", "cubic", "cubic+search"]
GEO_MARKS = [50, 100, 150, 200]
GEO_TASKS = {
    "geo-viasat": Sim(("--link", "geo-viasat", "--sender-cap", "200M:1.5s", "-n", "200M",
                       *(a for cc in GEO_CCS for a in ("--cc", cc))), out=True),
    "geo-viasat-real": Sim(("--link", "geo-viasat-real", "--sender-cap", "200M:1.5s", "-n", "200M",
                            *(a for cc in GEO_CCS[:2] for a in ("--cc", cc)), "--runs", "12"), out=True),
}


def received_times(run_dir):
    """Seconds to each MB received in any order, as qperf's byteslog counts (flow 0)."""
    with open(run_dir / "received_chunks.csv", newline="") as f:
        return {int(r["mb"]): float(r["time_s"]) for r in csv.DictReader(f) if r["flow"] == "0"}


def geo_runs(result):
    """(variant, summary, row, received times) of every run of a `--out` simulation."""
    with open(result.dir / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return [(r["variant"], r, received_times(result.dir / "runs" / r["run_id"])) for r in rows]


@table("geo-search", [GEO_TASKS["geo-viasat"].label() + " --out DIR -J   # seed 1",
                      "# MB received in any order: DIR/runs/*/received_chunks.csv"],
       [GEO_TASKS["geo-viasat"]])
def geo_search(results):
    rows = []
    for variant, r, received in geo_runs(results[GEO_TASKS["geo-viasat"]]):
        rows.append([f"`{variant}`", *(secs(received.get(mb)) for mb in GEO_MARKS), count(r["packets_lost"]),
                     f"{secs(r['exit_at_s'])} ({r['exit_reason'] or 'none'}), {r['exit_class']}"])
    return md_table(["cc", *(f"{mb} MB" for mb in GEO_MARKS), "lost", "exit (reason), class"], rows)


@table("geo-search-real", [GEO_TASKS["geo-viasat-real"].label() + " --out DIR -J   # seeds 1-12",
                           "# MB received in any order: DIR/runs/*/received_chunks.csv"],
       [GEO_TASKS["geo-viasat-real"]])
def geo_search_real(results):
    by_variant = {}
    for variant, r, received in geo_runs(results[GEO_TASKS["geo-viasat-real"]]):
        by_variant.setdefault(variant, []).append((r, received))
    rows = []
    for variant, runs in by_variant.items():
        def median_at(mb):
            times = [rec[mb] for _, rec in runs if mb in rec]
            return f"{secs(statistics.median(times))} ({len(times)})" if times else "-"
        classes = {}
        for r, _ in runs:
            classes[r["exit_class"]] = classes.get(r["exit_class"], 0) + 1
        rows.append([f"`{variant}`", *(median_at(mb) for mb in GEO_MARKS),
                     count(statistics.median(float(r["packets_lost"]) for r, _ in runs)),
                     ", ".join(f"{k} {v}" for k, v in sorted(classes.items()))])
    return md_table(["cc", *(f"{mb} MB: median (runs)" for mb in GEO_MARKS), "lost, median", "exit classes"], rows)


FIDELITY_CELLS = [("qir-sat", "10MiB", "cubic"), ("qir-sat", "10MiB", "satellite"),
                  ("geo-viasat", "100M", "cubic"), ("geo-viasat", "100M", "satellite")]
FIDELITY_TASKS = {cell: Sim(("--link", cell[0], "-n", cell[1], "--cc", cell[2])) for cell in FIDELITY_CELLS}


@table("fidelity-sim", ["satquic sim --link PRESET -n SIZE --cc CC -J"], list(FIDELITY_TASKS.values()))
def fidelity_sim(results):
    rows = [[*cell, secs(run_of(results[FIDELITY_TASKS[cell]])["completion_time_s"])] for cell in FIDELITY_CELLS]
    return md_table(["preset", "size", "cc", "sim s today"], rows)


CALIBRATE = Calibrate(("geo-viasat-real", "geo-viasat-bod"))


@table("calibration", [CALIBRATE.label() + " --out DIR --jobs 2"], [CALIBRATE])
def calibration(results):
    blocks = results[CALIBRATE].split("\n\n")
    ranking = blocks[0].strip()
    # The claim-by-claim table of the fitted preset follows its heading ("N. `LINK` (DIR)"),
    # which names a temporary directory and is left out.
    heading = next(i for i, b in enumerate(blocks) if re.match(r"\d+\. `geo-viasat-real` ", b))
    claims = blocks[heading + 1].strip()
    return ranking + "\n\nThe claims one by one, `geo-viasat-real`:\n\n" + claims


# --- BENCHMARKS.md --------------------------------------------------------------------


def render(tbl, results):
    return fenced(tbl.commands) + "\n\n" + tbl.render(results) + "\n"


def rewrite(text, generated):
    """BENCHMARKS.md with each known table replaced; refuses unknown markers."""
    known = {t.name for t in TABLES}

    def replace(m):
        name = m.group(1)
        if name not in known:
            raise UsageError(f"unknown table marker '{name}' (known: {', '.join(sorted(known))})")
        body = generated.get(name, m.group(2))
        return f"<!-- table: {name} -->\n{body}<!-- /table -->"

    return MARKER.sub(replace, text)


def parse_args(argv):
    p = argparse.ArgumentParser(description="Regenerates BENCHMARKS.md's simulator tables.")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the tables that differ")
    p.add_argument("--bin", default="target/release/satquic", help="the satquic binary (release build)")
    p.add_argument("--only", help="comma-separated table names (default: all)")
    p.add_argument("--jobs", type=int, default=MAX_JOBS, help=f"parallel simulations, 1 to {MAX_JOBS}")
    p.add_argument("--file", default=str(ROOT / "BENCHMARKS.md"), help="the file to rewrite")
    p.add_argument("--list", action="store_true", help="print the table names and exit")
    p.add_argument("--work", help="keep the runs in this directory and reuse the finished ones "
                   "(default: a temporary directory, removed at the end)")
    args = p.parse_args(argv)
    if not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs must be 1 to {MAX_JOBS}")
    return args


def selected_tables(only):
    if not only:
        return TABLES
    names = [n.strip() for n in only.split(",") if n.strip()]
    known = {t.name: t for t in TABLES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise UsageError(f"unknown table '{unknown[0]}' (known: {', '.join(known)})")
    return [known[n] for n in names]


def main(argv):
    args = parse_args(argv)
    if args.list:
        print("\n".join(t.name for t in TABLES))
        return 0
    binary = pathlib.Path(args.bin)
    if not binary.is_absolute():
        binary = pathlib.Path.cwd() / binary
    if not os.access(binary, os.X_OK):
        raise UsageError(f"no satquic binary at {args.bin}: build it with "
                         "`nice -n 19 cargo build --release -p satquic` or pass --bin")
    path = pathlib.Path(args.file)
    if not path.is_file():
        raise UsageError(f"--file {args.file}: not a regular file")
    text = path.read_text()
    if args.work:
        work = pathlib.Path(args.work)
        if work.exists() and not work.is_dir():
            raise UsageError(f"--work {args.work}: not a directory")
        if not work.exists() and not work.parent.is_dir():
            raise UsageError(f"--work {args.work}: its parent directory does not exist")
    present = {m.group(1) for m in MARKER.finditer(text)}
    rewrite(text, {})  # refuses unknown markers before anything runs
    tables = selected_tables(args.only)
    missing = [t.name for t in tables if t.name not in present]
    tables = [t for t in tables if t.name in present]
    with tempfile.TemporaryDirectory(prefix="bench-tables-") as scratch:
        work = args.work or scratch
        results = Runner(binary, args.jobs, work).run_all(t for tbl in tables for t in tbl.tasks)
        generated = {t.name: render(t, results) for t in tables}
    current = {m.group(1): m.group(2) for m in MARKER.finditer(text)}
    differ = [name for name, body in generated.items() if current.get(name) != body]
    for name in missing:
        print(f"bench-tables: no marker for table '{name}' in {path}", file=sys.stderr)
    if args.check:
        for name in differ:
            print(f"bench-tables: table '{name}' differs from what the binary gives", file=sys.stderr)
        if not differ and not missing:
            print(f"bench-tables: {len(generated)} tables match", file=sys.stderr)
        return 1 if differ or missing else 0
    new = rewrite(text, generated)
    if new != text:
        path.write_text(new)
    print(f"bench-tables: {len(generated)} tables regenerated, {len(differ)} changed"
          + (f" ({', '.join(differ)})" if differ else ""), file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UsageError as e:
        print(f"bench-tables: {e}", file=sys.stderr)
        sys.exit(2)
    except RuntimeError as e:  # a simulation that failed: its command and its last words
        print(f"bench-tables: {e}", file=sys.stderr)
        sys.exit(1)
