#!/usr/bin/env python3
"""The seeds' SEARCH (quicly's qperf) and satquic's through the same link, side by side.

Issue 34. Each run sends one 200 MB download through `satquic link --link geo-viasat
--sender-cap 200M:1.5s` (the seeds' 200 Mbit/s token bucket at the server, then the
Viasat-like GEO link; docs/matrix-and-peers.md, "The seeds' own code through the same
link"), one run at a time, N runs per row, and prints per row the medians of: time to 50/100/150/200 MB
received (any order, as qperf's `byteslog` counts; seconds from the client's start),
packets the link dropped (AQM, overflow, and the sender cap), datagrams the kernel dropped
for full socket receive buffers during the run (`RcvbufErrors`, machine-wide: losses no
link model counts, which an unpaced sender's bursts cause when a reader falls behind),
packets the sender declared lost, and the slow-start exit (SEARCH's exit, else the
sender's first congestion event; quicly's classic rows show the link's first drop
instead, marked `~`, unless its server prints the local debug lines). `--path chain`
runs the issue's two relays instead: a plain 200 Mbit/s link with a 37.5 MB drop-tail
queue in front of the server, then the GEO link.

    scripts/search-side-by-side.py --runs 5                 # quicly and satquic, real time
    scripts/search-side-by-side.py --runs 5 --sim           # plus satquic's simulator rows
    scripts/search-side-by-side.py --only sim --runs 5      # the simulator alone

Rows (`--rows` picks some by label):

| label | sender |
|---|---|
| quicly-classic | qperf `--cc reno` (quicly's Reno, beta 0.7, RFC 2001 slow start) |
| quicly-search10delv | qperf `--cc reno --ss search10delv --searchexit 1`: seed 000 Appendix A's SEARCH 2.0 |
| quicly-search10 | qperf `--cc reno --ss search10 --searchexit 1`: the fork's SEARCH 1.0 (sent vs delivered), the issue's "quicly + SEARCH" |
| satquic-classic | `newreno:loss-reduction=0.7` |
| satquic-search | `newreno:loss-reduction=0.7+search:v2` |
| satquic-classic-quicly, satquic-search-quicly | the same with `+unpaced`, `--iw 14720` and `--mtu 1280`: quicly's unpaced sending, initial window and packet size |

quicly's qperf is not in any package registry: build it with `scripts/build-qperf.sh`
(installs `~/.local/satquic-peers/bin/qperf-quicly`, or `$SATQUIC_PEERS/bin/...`), or
pass `--qperf PATH`. Without it the quicly rows are skipped with one line. Real-time runs
take the lock `--lock FILE` (or `$SATQUIC_REALTIME_LOCK`) for each run when given, so
they never overlap another measurement. `--out DIR` keeps every run's logs (link
summary, server and client output, satquic's server qlog with `--qlog`).
"""

import argparse
import fcntl
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARKS_MB = [50, 100, 150, 200]
LINK = "geo-viasat"
SENDER_CAP = "200M:1.5s"
# quicly's initial window: 10 packets of its 1472-byte maximum UDP payload
# (quicly_cc_calc_initial_cwnd, DEFAULT_MAX_UDP_PAYLOAD_SIZE).
QUICLY_IW_BYTES = 14720
# quicly's packets: its initial egress UDP payload (DEFAULT_INITIAL_EGRESS_MAX_UDP_PAYLOAD_SIZE),
# which it keeps through our link (measured: every data packet 1280 bytes).
QUICLY_PACKET_BYTES = 1280
RENO = "newreno:loss-reduction=0.7"
QUICLY_ROWS = {
    "quicly-classic": [],
    "quicly-search10delv": ["--ss", "search10delv", "--searchexit", "1"],
    "quicly-search10": ["--ss", "search10", "--searchexit", "1"],
}
SATQUIC_ROWS = {
    "satquic-classic": (RENO, []),
    "satquic-search": (RENO + "+search:v2", []),
    "satquic-classic-quicly": (RENO + "+unpaced", ["--iw", str(QUICLY_IW_BYTES), "--mtu", str(QUICLY_PACKET_BYTES)]),
    "satquic-search-quicly": (RENO + "+search:v2+unpaced", ["--iw", str(QUICLY_IW_BYTES), "--mtu", str(QUICLY_PACKET_BYTES)]),
}
DEFAULT_ROWS = [
    "quicly-classic",
    "quicly-search10delv",
    "quicly-search10",
    "satquic-classic",
    "satquic-search",
    "satquic-classic-quicly",
    "satquic-search-quicly",
]


def fail(message):
    print(f"search-side-by-side: {message}", file=sys.stderr)
    sys.exit(2)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lock:
    """The global real-time lock, held for one run (a no-op without a file)."""

    def __init__(self, path):
        self.path = path
        self.file = None

    def __enter__(self):
        if self.path:
            self.file = open(self.path, "a")
            fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self.file:
            fcntl.flock(self.file, fcntl.LOCK_UN)
            self.file.close()


def stop(proc, sig=signal.SIGINT, wait=5.0):
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_capped(cmd, cwd, time_cap):
    """The command's stdout; it is interrupted at the time cap (qperf's client with -n
    ignores -t and lingers after its last byte)."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            proc.wait(timeout=time_cap)
        except subprocess.TimeoutExpired:
            stop(proc)
        out.seek(0)
        return out.read()


def udp_receive_buffer_drops():
    """The kernel's count of UDP datagrams dropped for a full socket receive buffer
    (`RcvbufErrors` in /proc/net/snmp): losses no link model sees, which an unpaced
    sender's bursts cause when a reader falls behind."""
    try:
        lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Udp:")]
        return int(lines[1][lines[0].index("RcvbufErrors")])
    except (OSError, ValueError, IndexError):
        return None


class Path2:
    """The emulated path between a client port and a server port: one relay with the
    sender cap (`--path cap`), or the issue's chain of two relays (`--path chain`): the
    GEO link, then a plain 200 Mbit/s link with a 1.5 s (37.5 MB) drop-tail queue and no
    delay in front of the server."""

    def __init__(self, args, run_dir, listen, to):
        self.procs, self.summaries = [], []
        if args.path == "cap":
            self.start(args, run_dir, "link", listen, to, ["--link", LINK, "--sender-cap", SENDER_CAP])
        else:
            middle = free_port()
            self.start(args, run_dir, "cap", middle, to, ["--rate", "200M", "--delay", "0ms", "--queue", "37500000"])
            self.start(args, run_dir, "link", listen, middle, ["--link", LINK])
        time.sleep(0.3)

    def start(self, args, run_dir, name, listen, to, model):
        summary = run_dir / f"{name}.json"
        cmd = [args.satquic, "link", "--listen", f"127.0.0.1:{listen}", "--to", f"127.0.0.1:{to}", *model,
               "-q", "--summary-json", str(summary)]
        log = open(run_dir / f"{name}.log", "w")
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
        self.summaries.append(summary)

    def stop(self):
        for proc in self.procs:
            stop(proc)

    def numbers(self, client_start):
        """Packets dropped on the whole path, and the first drop (s from the client's start)."""
        drops, firsts = 0, []
        for summary in self.summaries:
            dropped, first = link_numbers(summary, client_start)
            drops += dropped
            if first is not None:
                firsts.append(first)
        return drops, (min(firsts) if firsts else None)


def start_link(args, run_dir, listen, to):
    path = Path2(args, run_dir, listen, to)
    return path, path


def link_numbers(summary, client_start):
    """Packets the link and the cap dropped, and the first drop (s from the client's start)."""
    data = json.loads(summary.read_text())
    down = data["down"]
    dropped = sum(down["dropped"].values()) + (data.get("sender_cap") or {}).get("dropped_packets", 0)
    first = down.get("first_drop_s")
    if first is not None:
        first += data["started_unix_ms"] / 1000.0 - client_start
    return dropped, first


def quicly_run(args, label, run_dir):
    work = run_dir / "qperf"
    work.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", "server.key", "-out", "server.crt", "-days", "2",
                    "-subj", "/CN=localhost"], cwd=work, check=True, capture_output=True)
    sport, lport = free_port(), free_port()
    server_cmd = ["stdbuf", "-oL", args.qperf, "-s", "-p", str(sport), "--mw", "256", "--cc", "reno",
                  *QUICLY_ROWS[label]]
    server_out = open(run_dir / "server.log", "w")
    link, summary = start_link(args, run_dir, lport, sport)
    server = subprocess.Popen(server_cmd, cwd=work, stdout=server_out, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    kernel_before = udp_receive_buffer_drops()
    client_start = time.time()
    try:
        out = run_capped([args.qperf, "-c", "127.0.0.1", "-p", str(lport), "-n", args.size,
                          "-t", str(args.time_cap), "--mw", "256"], work, args.time_cap)
    finally:
        stop(server, signal.SIGTERM)
        link.stop()
        server_out.close()
    kernel = kernel_drops_since(kernel_before)
    (run_dir / "client.log").write_text(out)
    times = {}
    for line in out.splitlines():
        if line.startswith("byteslog:"):
            ms, total = (int(x) for x in line.split(":", 1)[1].split(","))
            for mark in MARKS_MB:
                if mark not in times and total >= mark * 1_000_000:
                    times[mark] = ms / 1000.0 - client_start
    dropped, first_drop = summary.numbers(client_start)
    server_text = (run_dir / "server.log").read_text(errors="replace")
    exit_at, marked = None, ""
    lost = server_text.count("SQDBG LOST") if "SQDBG" in server_text else None
    for line in server_text.splitlines():
        if line.startswith("SEARCHLOG: EXIT"):
            exit_at = int(line.split(",")[1]) / 1000.0 - client_start
            break
        if line.startswith("SQDBG LOST") and exit_at is None:
            exit_at = int(line.split()[2]) / 1000.0 - client_start
            break
    if exit_at is None and first_drop is not None:
        exit_at, marked = first_drop, "~"
    return {"times": times, "dropped": dropped, "kernel_drops": kernel, "sender_lost": lost, "exit": exit_at,
            "exit_mark": marked}


def kernel_drops_since(before):
    after = udp_receive_buffer_drops()
    return None if before is None or after is None else after - before


def satquic_run(args, label, run_dir):
    spec, extra = SATQUIC_ROWS[label]
    sport, lport = free_port(), free_port()
    server_cmd = [args.satquic, "server", "--listen", f"127.0.0.1:{sport}", "--no-retry", "--cc", spec, *extra]
    if args.qlog:
        server_cmd += ["--qlog", str(run_dir / "qlog")]
    server_out = open(run_dir / "server.log", "w")
    link, summary = start_link(args, run_dir, lport, sport)
    server = subprocess.Popen(server_cmd, stdout=server_out, stderr=subprocess.STDOUT)
    time.sleep(0.5)
    kernel_before = udp_receive_buffer_drops()
    client_start = time.time()
    try:
        client = subprocess.run([args.satquic, "client", f"127.0.0.1:{lport}", "--insecure", "-n", args.size,
                                 "-J", "--time-cap", f"{args.time_cap}s", *extra],
                                capture_output=True, text=True, timeout=args.time_cap + 60)
    finally:
        stop(server)
        link.stop()
        server_out.close()
    kernel = kernel_drops_since(kernel_before)
    (run_dir / "client.json").write_text(client.stdout)
    record = json.loads(client.stdout) if client.stdout.strip() else {}
    if not record:
        first = ((run_dir / "server.log").read_text(errors="replace").splitlines() or [""])[0]
        print(f"{run_dir.name}: no result from the client; server: {first}", file=sys.stderr)
    return {**satquic_numbers(record, summary, client_start), "kernel_drops": kernel}


def satquic_numbers(record, summary, client_start):
    times = {}
    for row in record.get("received_chunks", []):
        if row["mb"] in MARKS_MB:
            times[row["mb"]] = row["time_s"]
    flow = (record.get("flows") or [{}])[0]
    dropped, _ = summary.numbers(client_start)
    # The server's events count from its accept, which --no-retry puts half an RTT after
    # the client's start: the client's connect time minus half the handshake's RTT.
    offset = (flow.get("connected_at_s") or 0.0) - (flow.get("first_rtt_s") or 0.0) / 2
    exit_at = None
    for event in record.get("events", []):
        if event.get("type") in ("slow_start_exit", "congestion") and not event.get("shadow"):
            exit_at = event["at"] + offset
            break
    return {"times": times, "dropped": dropped, "sender_lost": flow.get("packets_lost"),
            "exit": exit_at, "exit_mark": ""}


def sim_rows(args, labels, out):
    rows = {}
    for label in labels:
        spec, extra = SATQUIC_ROWS[label]
        run_out = out / f"sim-{label}"
        shutil.rmtree(run_out, ignore_errors=True)
        cmd = ["nice", "-n", "19", args.satquic, "sim", "--link", LINK, "--sender-cap", SENDER_CAP,
               "--cc", spec, *extra, "-n", args.size.replace("M", "MB"), "--runs", str(args.runs),
               "-t", str(args.time_cap), "--out", str(run_out)]
        subprocess.run(cmd, check=True, capture_output=True)
        results = []
        for run in sorted((run_out / "runs").iterdir()):
            summary = json.loads((run / "summary.json").read_text())
            flow = summary["flows"][0]
            times = {}
            received = run / "received_chunks.csv"
            for line in received.read_text().splitlines()[1:]:
                _, mb, t = line.split(",")
                if int(mb) in MARKS_MB:
                    times[int(mb)] = float(t)
            exit_at = None
            for line in (run / "events.jsonl").read_text().splitlines():
                event = json.loads(line)
                if event["type"] in ("slow_start_exit", "congestion") and not event.get("shadow"):
                    exit_at = event["at"]
                    break
            results.append({"times": times, "dropped": link_drops(summary), "sender_lost": flow.get("packets_lost"),
                            "exit": exit_at, "exit_mark": ""})
        rows["sim:" + label] = results
    return rows


def link_drops(summary):
    """Packets a simulated run's link and sender cap dropped: the simulator's summary.json
    counts the link's by reason (`link.drops`) and the cap's per flow (`sender_cap_drops`,
    absent when none), not as `satquic link`'s summary does."""
    link = summary.get("link") or {}
    drops = link.get("drops")
    if drops is None:
        return None
    cap = sum(flow.get("sender_cap_drops", 0) for flow in summary.get("flows", []))
    return sum(drops.values()) + link.get("up_drops", 0) + cap


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=2, mark=""):
    if value is None:
        return "-"
    return f"{mark}{value:.{digits}f}" if digits else f"{mark}{value:.0f}"


def print_table(rows, runs):
    head = ["row", "n"] + [f"{m} MB (s)" for m in MARKS_MB] + ["link drops", "kernel drops", "sender lost",
                                                              "ss exit (s)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, results in rows.items():
        cells = [label, str(len(results))]
        for mark in MARKS_MB:
            cells.append(fmt(median([r["times"].get(mark) for r in results])))
        cells.append(fmt(median([r["dropped"] for r in results]), 0))
        cells.append(fmt(median([r.get("kernel_drops") for r in results]), 0))
        cells.append(fmt(median([r["sender_lost"] for r in results]), 0))
        marks = {r["exit_mark"] for r in results if r["exit"] is not None}
        cells.append(fmt(median([r["exit"] for r in results]), 2, "~" if "~" in marks else ""))
        print("| " + " | ".join(cells) + " |")
    print(f"\nmedians over {runs} run(s) each; per-run values in the --out directory's results.json")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--rows", default=",".join(DEFAULT_ROWS), help="comma-separated row labels")
    p.add_argument("--only", default="real", help="real, sim, or real,sim")
    p.add_argument("--sim", action="store_true", help="also the simulator's rows for the satquic labels")
    p.add_argument("--satquic", default=os.environ.get("SATQUIC", "target/release/satquic"))
    peers = os.environ.get("SATQUIC_PEERS", str(Path.home() / ".local/satquic-peers"))
    p.add_argument("--qperf", default=str(Path(peers) / "bin/qperf-quicly"))
    p.add_argument("--size", default="200M")
    p.add_argument("--time-cap", type=int, default=60)
    p.add_argument("--path", choices=["cap", "chain"], default="cap",
                   help="one relay with --sender-cap 200M:1.5s (default), or the issue's two relays")
    p.add_argument("--lock", default=os.environ.get("SATQUIC_REALTIME_LOCK"))
    p.add_argument("--qlog", action="store_true", help="satquic's server writes a qlog per run")
    p.add_argument("--out", help="keep every run's files here (default: a temporary directory)")
    args = p.parse_args()
    if args.runs < 1:
        fail("--runs must be at least 1")
    labels = [x for x in args.rows.split(",") if x]
    unknown = [x for x in labels if x not in QUICLY_ROWS and x not in SATQUIC_ROWS]
    if unknown:
        fail(f"unknown row {unknown[0]!r}; rows: {', '.join(DEFAULT_ROWS)}")
    modes = set(args.only.split(","))
    if args.sim:
        modes.add("sim")
    if not modes <= {"real", "sim"}:
        fail("--only takes real, sim or real,sim")
    if not (Path(args.satquic).is_file() or shutil.which(args.satquic)):
        fail(f"no satquic at {args.satquic} (cargo build --release -p satquic, or --satquic PATH)")
    return args, labels, modes


def main():
    args, labels, modes = parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="search-side-by-side-"))
    out.mkdir(parents=True, exist_ok=True)
    have_qperf = Path(args.qperf).is_file() and os.access(args.qperf, os.X_OK)
    if "real" in modes and not have_qperf and any(x in QUICLY_ROWS for x in labels):
        print(f"quicly rows skipped: no qperf at {args.qperf} (build it with scripts/build-qperf.sh)")
    rows = {}
    if "real" in modes:
        for label in labels:
            if label in QUICLY_ROWS and not have_qperf:
                continue
            results = []
            for i in range(args.runs):
                run_dir = out / f"{label}-{i + 1}"
                shutil.rmtree(run_dir, ignore_errors=True)
                run_dir.mkdir()
                with Lock(args.lock):
                    run = quicly_run if label in QUICLY_ROWS else satquic_run
                    results.append(run(args, label, run_dir))
                print(f"{label} run {i + 1}: {json.dumps(results[-1])}", file=sys.stderr)
            rows[label] = results
    if "sim" in modes:
        rows.update(sim_rows(args, [x for x in labels if x in SATQUIC_ROWS], out))
    if not rows:
        return
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    print_table(rows, args.runs)
    print(f"files: {out}")


if __name__ == "__main__":
    main()
