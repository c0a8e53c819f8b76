#!/usr/bin/env python3
"""One pair of flows beside each other in real time, through `satquic link`.

Issue 38 item 1: the simulator's pairs (`satquic beside`) measure each flow over the
period both shared the bottleneck; this runs one such pair over real sockets and prints
the same row, from the relay's per-flow books (`satquic link --flows-json`: the link
model's ground truth of each flow's datagrams, their queueing delay and drops) beside
the clients' own goodput.

    flock /work/realtime.lock scripts/beside-realtime.py --link thesis-sat \\
        --incumbent cubic --latecomer satellite --stagger 5 --duration 30

The pair runs as uploads (`satquic client -R`: each client's `--cc` is its sender's), so
the link's *up* direction is the bottleneck: give a link whose up direction is the
path's data direction (symmetric presets such as thesis-sat are; for an asymmetric path
use a mirrored link file, crates/lab/campaigns/beside/links/, grid links/pNN-mirror.toml).
`--latecomer-cmd 'CMD'` runs any other client instead of satquic's latecomer (another
QUIC stack from scripts/install-peers.sh, sending to `{host}:{port}`); `{duration}` in it
is replaced by the latecomer's duration in seconds, and `--latecomer-server-cmd` starts
its server first, if it needs its own.

`--tun` (root) runs the pair through `satquic link --tun` instead of the UDP relay: the
servers in the server namespace, the clients in the client namespace, so kernel TCP can
be the latecomer (or the incumbent's peer):

    flock /work/realtime.lock scripts/beside-realtime.py --tun --link thesis-sat \
        --incumbent satellite --latecomer-server-cmd 'iperf3 -s -1' \
        --latecomer-cmd 'iperf3 -c {host} -t {duration} -C cubic' --stagger 5 --duration 30

Columns: as `satquic beside`'s "every pair over the shared period" table, with goodput
and share from the link's delivered payload (the relay cannot see the applications'
goodput; the clients' own figures follow in the last columns).
"""

import argparse
import contextlib
import errno
import fcntl
import json
import os
import shlex
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COLUMNS = [
    "path", "stagger", "incumbent", "latecomer", "incumbent Mbit/s (link)",
    "latecomer Mbit/s (link)", "incumbent share %", "incumbent loss %",
    "latecomer loss %", "incumbent queue p50, ms", "incumbent queue p95, ms",
    "latecomer queue p50, ms", "latecomer queue p95, ms", "JFI", "shared, s",
    "incumbent goodput Mbit/s (client)", "latecomer goodput Mbit/s (client)",
]


def free_udp_port():
    """A UDP port nobody holds right now on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client_cmd(binary, host, port, cc, duration):
    """A satquic upload of `duration` seconds with controller `cc`, JSON out."""
    return [binary, "client", f"{host}:{port}", "-R", "-t", f"{duration:g}s", "--cc", cc,
            "--insecure", "-J"]


def goodput_mbps(stdout):
    """The client's goodput from its -J output, Mbit/s; None if it has none."""
    try:
        flows = json.loads(stdout)["flows"]
        return flows[0]["goodput_bps"] / 1e6
    except (ValueError, KeyError, IndexError, TypeError):
        return None


def row(args, flows, goodputs):
    """The table row from the relay's report (flows.json) and the clients' goodputs."""
    shared = flows.get("shared")
    if not shared or len(shared["flows"]) < 2:
        fail("the flows never shared the link (see the relay's flows.json)", 1)
    by_start = sorted(flows["flows"], key=lambda f: f["first_s"])
    ids = [f["flow"] for f in by_start]
    sf = sorted(shared["flows"], key=lambda f: ids.index(f["flow"]) if f["flow"] in ids else 99)
    inc, late = sf[0], sf[1]

    def loss(f):
        return 100.0 * f["link_drops"] / f["link_packets"] if f["link_packets"] else 0.0

    def q(f, key):
        d = f.get("queue_delay")
        return f"{d[key]:.1f}" if d else "-"

    def mbps(v):
        return "-" if v is None else f"{v:.2f}"

    return [
        args.link, f"{args.stagger:g} s", args.incumbent, args.latecomer_label,
        f"{inc['goodput_bps'] / 1e6:.2f}", f"{late['goodput_bps'] / 1e6:.2f}",
        f"{100 * inc['share']:.2f}", f"{loss(inc):.2f}", f"{loss(late):.2f}",
        q(inc, "p50_ms"), q(inc, "p95_ms"), q(late, "p50_ms"), q(late, "p95_ms"),
        f"{shared['jain_index']:.3f}", f"{shared['to_s'] - shared['from_s']:.0f}",
        mbps(goodputs[0]), mbps(goodputs[1]),
    ]


def finish(proc, timeout):
    """A client's stdout once it ends; one that outlives `timeout` (an iperf3 whose closing
    exchange never gets through) is stopped, and what it printed is kept."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.communicate(timeout=10)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.communicate()[0]


@contextlib.contextmanager
def lock(path):
    """Holds `path` exclusively (flock) while the pair runs, if given. Anything but a regular
    file (made if missing) is refused in one line: a FIFO nobody reads blocked the open for
    ever, a directory was a traceback. Opened without blocking, then checked."""
    if path is None:
        yield
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError as e:
        kind = "a directory" if os.path.isdir(path) else "a FIFO" if e.errno == errno.ENXIO else None
        fail(f"--lock {path}: {kind + ', not a regular file' if kind else e.strerror}")
    with os.fdopen(fd, "a") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            fail(f"--lock {path}: not a regular file")
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def fail(msg, code=2):
    """One line on stderr and the exit code (2: the input was refused)."""
    print(f"beside-realtime: {msg}", file=sys.stderr)
    sys.exit(code)


def first_error(log):
    """The first line of a child's log that says what went wrong (or its first line)."""
    try:
        lines = [l.strip() for l in Path(log).read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return "no log"
    errors = [l for l in lines if "error" in l.lower()]
    return (errors or lines or ["no output"])[0]


# How long the link and the server are watched before the next starts: the link runs this
# much longer than the pair's stagger, duration and tail.
CHECK_S = 0.5


def started(proc, name, log, wait=CHECK_S):
    """Returns once `proc` has run `wait` seconds; one that ended with an error by then
    (a link, controller or flag it refused) ends the pair in one line, exit 2."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None and proc.returncode != 0:
            fail(f"the {name} failed at once (exit {proc.returncode}): {first_error(log)}")
        time.sleep(0.05)


TUN_CLIENT_NS, TUN_SERVER_NS = "satq-client", "satq-server"
TUN_SERVER_ADDR = "10.199.0.2"


def wait_for_namespaces(timeout=15.0):
    """Waits until `satquic link --tun` has made both namespaces."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        if TUN_CLIENT_NS in names and TUN_SERVER_NS in names:
            time.sleep(0.5)
            return
        time.sleep(0.2)
    fail("satquic link --tun made no namespaces (root? see link.log)", 1)


def latecomer_cmd(template, host, port, duration):
    """`--latecomer-cmd` with its {host}, {port} and {duration} filled in."""
    try:
        return shlex.split(template.format(host=host, port=port, duration=f"{duration:g}"))
    except (KeyError, IndexError, ValueError) as e:
        fail(f"--latecomer-cmd {template!r}: {e} (it may name {{host}}, {{port}} and {{duration}})")


def run_pair(args, out):
    """Server, link, incumbent, latecomer `stagger` later; the link's flows.json."""
    server_port, relay_port = free_udp_port(), free_udp_port()
    flows_json = out / "flows.json"
    watched = (3 if args.latecomer_server_cmd else 2) * CHECK_S  # link, server(s)
    total = watched + args.stagger + args.duration + args.tail
    common = ["--link", args.link, "--seed", str(args.seed), "-q",
              "--flows-json", str(flows_json), "--duration", f"{total:g}s"]
    if args.tun:
        in_client, in_server = ["ip", "netns", "exec", TUN_CLIENT_NS], ["ip", "netns", "exec", TUN_SERVER_NS]
        host, port, listen = TUN_SERVER_ADDR, server_port, f"{TUN_SERVER_ADDR}:{server_port}"
        link_cmd = [args.bin, "link", "--tun"] + common
    else:
        in_client, in_server = [], []
        host, port, listen = "127.0.0.1", relay_port, f"127.0.0.1:{server_port}"
        link_cmd = [args.bin, "link", "--listen", f"127.0.0.1:{relay_port}", "--to",
                    f"127.0.0.1:{server_port}"] + common
    procs = []
    try:
        link = subprocess.Popen(link_cmd, stdout=open(out / "link.log", "w"), stderr=subprocess.STDOUT)
        procs.append(link)
        started(link, "link", out / "link.log")
        if args.tun:
            wait_for_namespaces()
        server = subprocess.Popen(in_server + [args.bin, "server", "--listen", listen],
                                  stdout=open(out / "server.log", "w"), stderr=subprocess.STDOUT)
        procs.append(server)
        started(server, "server", out / "server.log")
        if args.latecomer_server_cmd:
            procs.append(subprocess.Popen(
                in_server + shlex.split(args.latecomer_server_cmd),
                stdout=open(out / "latecomer-server.log", "w"), stderr=subprocess.STDOUT))
            started(procs[-1], "latecomer's server", out / "latecomer-server.log")
        incumbent = subprocess.Popen(
            in_client + client_cmd(args.bin, host, port, args.incumbent, args.duration),
            stdout=subprocess.PIPE, stderr=open(out / "incumbent.err", "w"), text=True)
        procs.append(incumbent)
        # The stagger itself is the incumbent's check (none with a stagger of 0).
        started(incumbent, "incumbent", out / "incumbent.err", args.stagger)
        if args.latecomer_cmd:
            cmd = latecomer_cmd(args.latecomer_cmd, host, port, args.duration)
        else:
            cmd = client_cmd(args.bin, host, port, args.latecomer, args.duration)
        latecomer = subprocess.Popen(in_client + cmd, stdout=subprocess.PIPE,
                                     stderr=open(out / "latecomer.err", "w"), text=True)
        procs.append(latecomer)
        started(latecomer, "latecomer", out / "latecomer.err")
        outputs = [finish(p, args.duration + 30) for p in (incumbent, latecomer)]
        for name, text in zip(("incumbent", "latecomer"), outputs):
            (out / f"{name}.json").write_text(text or "")
        link.wait(timeout=total + 60)
        try:
            flows = json.loads(flows_json.read_text())
        except (OSError, ValueError):
            fail(f"the relay wrote no flows.json: {first_error(out / 'link.log')}", 1)
        return flows, [goodput_mbps(o) for o in outputs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="target/release/satquic", help="the satquic binary")
    ap.add_argument("--link", default="thesis-sat", help="preset or link file (up = data)")
    ap.add_argument("--incumbent", default="cubic", help="the incumbent's --cc")
    ap.add_argument("--latecomer", default="satellite", help="the latecomer's --cc")
    ap.add_argument("--latecomer-cmd", help="any other latecomer command ({host} {port} {duration})")
    ap.add_argument("--latecomer-server-cmd", help="its server, started before the incumbent")
    ap.add_argument("--tun", action="store_true", help="through satquic link --tun (root)")
    ap.add_argument("--stagger", type=float, default=5.0, help="seconds between the starts")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds each flow sends")
    ap.add_argument("--tail", type=float, default=5.0, help="seconds the relay runs on after")
    ap.add_argument("--seed", type=int, default=1, help="the link model's seed")
    ap.add_argument("--lock", help="a lock file held while the pair runs (flock)")
    ap.add_argument("--out", help="keep the logs and flows.json here")
    args = ap.parse_args()
    if args.stagger < 0 or args.duration <= 0 or args.tail < 0:
        fail("--stagger and --tail must be at least 0 and --duration above 0")
    if not Path(args.bin).is_file():
        fail(f"no satquic binary at {args.bin} (--bin)")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        fail(f"--out {args.out}: not a directory")
    for flag, cmd in (("--latecomer-cmd", args.latecomer_cmd),
                      ("--latecomer-server-cmd", args.latecomer_server_cmd)):
        if cmd is not None and not cmd.split():
            fail(f"{flag} {cmd!r}: an empty command (leave the flag out for satquic's latecomer)")
    if args.lock is not None and not args.lock:
        fail("--lock '': an empty path")
    args.latecomer_label = args.latecomer_cmd.split()[0] if args.latecomer_cmd else args.latecomer
    latecomer_cmd(args.latecomer_cmd or "", "", 0, 0)  # refuses a bad template before the run
    with tempfile.TemporaryDirectory() as tmp, lock(args.lock):
        out = Path(args.out) if args.out else Path(tmp)
        try:
            out.mkdir(exist_ok=True)
        except OSError as e:
            fail(f"--out {args.out}: {e.strerror}")
        try:
            flows, goodputs = run_pair(args, out)
        except OSError as e:
            fail(f"cannot start {e.filename or 'a command'}: {e.strerror}")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    print("| " + " | ".join(row(args, flows, goodputs)) + " |")


if __name__ == "__main__":
    main()
