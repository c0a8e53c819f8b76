"""picoquic on the grid's points, in its own simulator (scripts/grid.py run --picoquic).

The anchor build (build_picoquic_anchor.sh of the shared anchors) prints `ANCHOR
completion_us=...` for a satellite test and lets ANCHOR_LATENCY_US, ANCHOR_MBPS_UP (the
client's sending direction), ANCHOR_MBPS_DOWN, ANCHOR_BYTES and ANCHOR_NO_LIMIT override
`satellite_test_one`: a client upload of ANCHOR_BYTES after the handshake, timed from the
client's start to the last byte at the server. Its link queue is not unlimited: the test
drops a packet whose queueing delay would reach 2 x ANCHOR_LATENCY_US (a 1-BDP drop-tail
queue on every point). Its loss is a fixed pattern (1 in 64), so only lossless points run.

Each run writes a client qlog into its working directory (a temporary one here); what the
grid keeps of it (losses, congestion-state changes, the window every 10 ms) goes into the
cache with the completion time, and the qlog is deleted (hundreds of MB at 500 MB).
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time

# test name -> label in the grid's tables
TESTS = {"satellite_basic": "picoquic-bbr3", "satellite_cubic": "picoquic-cubic"}
DEFAULT_CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "satquic-grid-picoquic"
SERIES_STEP_US = 10_000  # the window's series: one row per 10 ms, as satquic's series.csv

ANCHOR_RE = re.compile(r"ANCHOR completion_us=(\d+)")
TIME_RE = re.compile(r"^\[(\d+),")
NUM_RE = {k: re.compile(rf'"{k}": (\d+)') for k in ("cwnd", "bytes_in_flight", "smoothed_rtt", "byte_length")}
STATE_RE = re.compile(r'"new": "(\d+)"')
TRIGGER_RE = re.compile(r'"trigger": "(\w+)"')
TYPE_RE = re.compile(r'"packet_type" : "(\w+)"')


def commit_of(src, binary):
    """The picoquic commit of the source folder, else the binary's digest."""
    r = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
    if r.returncode == 0:
        return r.stdout.strip()
    import hashlib
    return "bin-" + hashlib.sha256(pathlib.Path(binary).read_bytes()).hexdigest()[:16]


def key(p, test):
    """A point's cache key: what picoquic's run depends on (not the queue or the loss)."""
    return f"{test}-f{p.pq_fwd_mbps}-r{p.pq_ret_mbps}-l{p.owd_ms * 1000}-b{p.bytes}"


def parse_qlog(path):
    """Losses by trigger and packet type, congestion-state changes, datagrams and the
    window every SERIES_STEP_US, from picoquic's client (sender) qlog."""
    lost, states, series, datagrams = {}, [], [], 0
    next_row = 0
    pending_lost = False
    with open(path, errors="replace") as f:
        for line in f:
            if pending_lost:
                # The event's fields follow on the next lines: type, number, trigger.
                m = TRIGGER_RE.search(line)
                if m:
                    k = f"{pending_type}:{m.group(1)}"
                    lost[k] = lost.get(k, 0) + 1
                    pending_lost = False
                t = TYPE_RE.search(line)
                if t:
                    pending_type = t.group(1)
                continue
            m = TIME_RE.match(line)
            if not m:
                continue
            t_us = int(m.group(1))
            if '"datagram_sent"' in line:
                datagrams += 1
            elif '"packet_lost"' in line:
                pending_lost, pending_type = True, "?"
            elif '"congestion_state_updated"' in line:
                s = STATE_RE.search(line)
                states.append([t_us / 1e6, int(s.group(1)) if s else None])
            elif '"metrics_updated"' in line and '"cwnd"' in line and t_us >= next_row:
                row = [t_us / 1e6] + [int(x.group(1)) if (x := NUM_RE[k].search(line)) else None
                                      for k in ("cwnd", "bytes_in_flight", "smoothed_rtt")]
                series.append(row)
                next_row = (t_us // SERIES_STEP_US + 1) * SERIES_STEP_US
    return {"lost": lost, "states": states, "datagrams": datagrams}, series


class Runner:
    def __init__(self, binary, src, cache):
        self.binary = pathlib.Path(binary).resolve()
        self.src = pathlib.Path(src).resolve() if src else self.binary.parent.parent
        self.commit = commit_of(self.src, self.binary)
        self.cache = pathlib.Path(cache).resolve() / self.commit
        self.cache.mkdir(parents=True, exist_ok=True)

    def describe(self):
        return {"binary": str(self.binary), "src": str(self.src), "commit": self.commit, "cache": str(self.cache)}

    def cached(self, p, test):
        return (self.cache / (key(p, test) + ".json")).exists()

    def task(self, p, test):
        def run():
            t0 = time.monotonic()
            result = self.run_one(p, test)
            return f"picoquic {test} {p.point}: {result['status']} {time.monotonic() - t0:.1f} s"
        return run

    def run_one(self, p, test):
        env = dict(os.environ, ANCHOR_LATENCY_US=str(p.owd_ms * 1000), ANCHOR_MBPS_UP=str(p.pq_fwd_mbps),
                   ANCHOR_MBPS_DOWN=str(p.pq_ret_mbps), ANCHOR_BYTES=str(p.bytes), ANCHOR_NO_LIMIT="1")
        work = pathlib.Path(tempfile.mkdtemp(prefix="grid-picoquic-"))
        t0 = time.monotonic()
        try:
            r = subprocess.run([str(self.binary), "-S", str(self.src), test], cwd=work, env=env,
                               capture_output=True, text=True)
            m = ANCHOR_RE.search(r.stderr + r.stdout)
            qlogs = list(work.glob("*.qlog"))
            stats, series = parse_qlog(qlogs[0]) if qlogs else ({}, [])
        finally:
            shutil.rmtree(work, ignore_errors=True)
        result = {
            "test": test, "label": TESTS[test], "key": key(p, test), "commit": self.commit,
            "env": {k: env[k] for k in env if k.startswith("ANCHOR_")},
            "status": "completed" if m and r.returncode == 0 else f"failed (exit {r.returncode})",
            "completion_s": int(m.group(1)) / 1e6 if m else None,
            "wall_s": time.monotonic() - t0, **stats,
        }
        base = self.cache / key(p, test)
        with open(str(base) + ".series.csv", "w") as f:
            f.write("time_s,cwnd_bytes,in_flight_bytes,smoothed_rtt_us\n")
            for row in series:
                f.write(",".join("" if v is None else str(v) for v in row) + "\n")
        tmp = pathlib.Path(str(base) + ".json.tmp")
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.rename(str(base) + ".json")
        return result


def load(cache_dir, p, test):
    """The cached result of a point and test, or None."""
    path = pathlib.Path(cache_dir) / (key(p, test) + ".json")
    return json.loads(path.read_text()) if path.exists() else None
