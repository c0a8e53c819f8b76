"""The satellite grid's points: GEO paths drawn from a fixed seed, their link files, and
the physical limit of a transfer on each, from satquic's model (`satquic presets --limits`,
crates/lab/src/limit.rs; scripts/grid.py generate; the grid's README,
crates/lab/campaigns/grid/README.md, says why each rule is what it is).

A point is a path (forward and return rate, one-way delay, drop-tail queue, random loss)
and a transfer size. Points come in three classes, each drawn as a Latin hypercube (every
parameter's range cut into as many strata as the class has points, one point per stratum,
the strata paired at random), so a few dozen points cover the space evenly:

- short: 100 kB and 1 MB, where the completion time is start-up;
- bulk: 2 to 50 BDP, capped at MAX_BYTES;
- long: 50 to 100 BDP, lossless, on paths slow enough that this fits under MAX_BYTES
  (the issue checks these against the physical limit).

Rates are chosen so that satquic's simulator and picoquic's (ANCHOR_MBPS_* of the anchor
build) carry the same bulk goodput: picoquic's satellite test link takes an integer
ANCHOR_MBPS k, serializes a datagram of L bytes (UDP payload only) in
floor(floor(8e6 / k) * L / 2^20) microseconds, which is faster than k Mbit/s (2^20, not
10^6, and the floor), while satquic's link counts IP and UDP headers. The grid draws k
and sets satquic's rate to the one whose full-size packets carry the same stream bytes
per second.
"""

import csv
import math
import pathlib
import random
import subprocess
import tempfile
from dataclasses import dataclass, asdict, fields

# --- the space (issue 30, "Build" item 1) ---
FORWARD_MBPS = (10.0, 1000.0)  # data direction, log-uniform
RETURN_MBPS = (1.0, 50.0)  # log-uniform, never above the forward rate
ONE_WAY_MS = (250, 450)  # uniform, the same both ways
QUEUE_BDP = (0.5, 8.0)  # drop-tail, log-uniform, a multiple of rate x base RTT
BULK_BDP = (2.0, 50.0)  # transfer size of the bulk class, log-uniform
LONG_BDP = (50.0, 100.0)  # ... of the long class
SHORT_BYTES = (100_000, 1_000_000)
# The largest transfer: 500 MB is about 350,000 packets, ~1.5 s of CPU for one satquic
# simulation (p42's upload, three variants: 4.2 s).
MAX_BYTES = 500_000_000
# Class sizes and their losses (0, 0.1 %, 1 % random loss, both directions).
SHORT_PER_SIZE = 8
SHORT_LOSSES = [0.0] * 5 + [0.001] * 2 + [0.01]  # per size
BULK_LOSSES = [0.0] * 20 + [0.001] * 6 + [0.01] * 6
LONG_POINTS = 16
# A return queue holds at least this many full-size packets (its BDP multiple may be less
# on a 1 Mbit/s return link).
MIN_RETURN_QUEUE_PACKETS = 10

# --- how the two simulators count bytes ---
IP_UDP_OVERHEAD = 28  # satquic-link: every datagram occupies its UDP payload + 28 bytes
SATQUIC_DATAGRAM = 1452  # quinn's PLPMTUD upper bound, reached on these links
# Stream bytes per 1452-byte datagram in a bulk transfer: 160 MB in 112,758 datagrams
# (satquic sim, 200 MB minus 40 MB, lossless): 33 bytes of QUIC header, AEAD tag and
# STREAM frame header.
SATQUIC_PAYLOAD = 1419
PICOQUIC_DATAGRAM = 1440  # picoquic's datagram size in its satellite tests (its qlog)
# Stream bytes per 1440-byte datagram: 100 MB in 71,115 datagrams (satellite_cubic,
# ANCHOR_MBPS_UP=500, ANCHOR_BYTES=100000000).
PICOQUIC_PAYLOAD = 1406
PICOQUIC_MAX_MBPS = 2000  # search range of ANCHOR_MBPS


def picoquic_packet_us(k):
    """Microseconds picoquic's satellite test link takes for a full-size datagram at
    ANCHOR_MBPS = k (picoquictest/satellite_test.c: picosec_per_byte = 8e6 / k;
    picoquic/sim_link.c: (picosec_per_byte * length) >> 20, at least 1)."""
    return max(1, ((8_000_000 // k) * PICOQUIC_DATAGRAM) >> 20)


def goodput_bps(k):
    """Bulk stream goodput of picoquic's link at ANCHOR_MBPS = k, bit/s."""
    return PICOQUIC_PAYLOAD * 8 / (picoquic_packet_us(k) * 1e-6)


def satquic_rate_bps(k):
    """satquic's link rate (IP and UDP headers counted) with picoquic's goodput at k."""
    return round(goodput_bps(k) * (SATQUIC_DATAGRAM + IP_UDP_OVERHEAD) / SATQUIC_PAYLOAD)


def nearest_k(target_bps, lo_bps, hi_bps):
    """The ANCHOR_MBPS whose matched satquic rate is nearest to target (log scale), among
    those whose rate lies in [lo_bps, hi_bps]."""
    best = None
    for k in range(1, PICOQUIC_MAX_MBPS + 1):
        r = satquic_rate_bps(k)
        if not lo_bps <= r <= hi_bps:
            continue
        d = abs(math.log(r / target_bps))
        if best is None or d < best[0]:
            best = (d, k)
    if best is None:
        raise ValueError(f"no picoquic rate in [{lo_bps}, {hi_bps}] bit/s")
    return best[1]


def satquic_limits(satquic, link, sizes):
    """{bytes: (upload_s, download_s, serialization_s)}: the physical limits of transfers
    over `link` (a preset or link file) from satquic's model, the data in the link's down
    direction (an upload's over its mirror), and the data's time at the down rate (None on
    a slotted link): `satquic presets --limits LINK --bytes ...`."""
    r = subprocess.run([str(satquic), "presets", "--limits", str(link), "--bytes", ",".join(map(str, sizes))],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"satquic presets --limits {link}: {r.stderr.strip()}")
    return {int(row["bytes"]): (float(row["up_s"]), float(row["down_s"]),
                                float(row["serialization_s"]) if row["serialization_s"] else None)
            for row in csv.DictReader(r.stdout.splitlines())}


def point_limits(satquic, p):
    """(upload_s, download_s, serialization_s) of a point's transfer, from satquic's model
    over the point's link file."""
    with tempfile.TemporaryDirectory() as d:
        link = pathlib.Path(d) / f"{p.point or 'point'}.toml"
        link.write_text(link_toml(p, 0, False))
        return satquic_limits(satquic, link, [p.bytes])[p.bytes]


def add_limits(points, satquic):
    """Each point's phys_up_s and phys_down_s (rounded to the microsecond)."""
    for p in points:
        up, down, _ = point_limits(satquic, p)
        p.phys_up_s, p.phys_down_s = round(up, 6), round(down, 6)


@dataclass
class Point:
    point: str
    cls: str
    fwd_bps: int
    ret_bps: int
    pq_fwd_mbps: int
    pq_ret_mbps: int
    owd_ms: int
    queue_bdp: float
    fwd_queue_bytes: int
    ret_queue_bytes: int
    loss: float
    bytes: int
    bdp_bytes: int
    size_bdp: float
    phys_up_s: float
    phys_down_s: float


def latin_hypercube(rng, n, dims):
    """n points in [0,1)^dims, one per stratum of every dimension."""
    cols = []
    for _ in range(dims):
        perm = list(range(n))
        rng.shuffle(perm)
        cols.append([(p + rng.random()) / n for p in perm])
    return [tuple(c[i] for c in cols) for i in range(n)]


def log_uniform(u, lo, hi):
    return math.exp(math.log(lo) + u * (math.log(hi) - math.log(lo)))


def make_point(cls, u_fwd, u_ret, u_owd, u_queue, loss, size_rule, fwd_max_bps=None):
    """A point from unit draws; size_rule(bdp_bytes) gives the transfer size."""
    owd_ms = round(ONE_WAY_MS[0] + u_owd * (ONE_WAY_MS[1] - ONE_WAY_MS[0]))
    rtt_s = 2 * owd_ms / 1000
    fwd_hi = FORWARD_MBPS[1] * 1e6 if fwd_max_bps is None else min(fwd_max_bps, FORWARD_MBPS[1] * 1e6)
    k_f = nearest_k(log_uniform(u_fwd, FORWARD_MBPS[0] * 1e6, fwd_hi), FORWARD_MBPS[0] * 1e6, fwd_hi)
    fwd = satquic_rate_bps(k_f)
    ret_hi = min(RETURN_MBPS[1] * 1e6, fwd)
    k_r = nearest_k(log_uniform(u_ret, RETURN_MBPS[0] * 1e6, ret_hi), 0, ret_hi)
    ret = satquic_rate_bps(k_r)
    queue_bdp = round(log_uniform(u_queue, *QUEUE_BDP), 2)
    bdp = round(fwd * rtt_s / 8)
    min_ret_queue = MIN_RETURN_QUEUE_PACKETS * (SATQUIC_DATAGRAM + IP_UDP_OVERHEAD)
    size = size_rule(bdp)
    return Point(
        point="", cls=cls, fwd_bps=fwd, ret_bps=ret, pq_fwd_mbps=k_f, pq_ret_mbps=k_r,
        owd_ms=owd_ms, queue_bdp=queue_bdp, fwd_queue_bytes=round(queue_bdp * bdp),
        ret_queue_bytes=max(min_ret_queue, round(queue_bdp * ret * rtt_s / 8)),
        loss=loss, bytes=size, bdp_bytes=bdp, size_bdp=round(size / bdp, 3),
        phys_up_s=None, phys_down_s=None,  # add_limits
    )


def bdp_size(m):
    """m BDP in whole kB, at most MAX_BYTES."""
    return lambda bdp: min(MAX_BYTES, round(m * bdp / 1000) * 1000)


def generate(seed, satquic=None):
    """The grid's points for `seed`, named p00, p01, ... (class by class, by rate), with
    their physical limits from the `satquic` binary (none without it)."""
    rng = random.Random(seed)
    points = []
    for size in SHORT_BYTES:
        losses = SHORT_LOSSES[:]
        rng.shuffle(losses)
        for (uf, ur, uo, uq), loss in zip(latin_hypercube(rng, SHORT_PER_SIZE, 4), losses):
            points.append(make_point("short", uf, ur, uo, uq, loss, lambda _b, s=size: s))
    losses = BULK_LOSSES[:]
    rng.shuffle(losses)
    for (uf, ur, uo, uq, um), loss in zip(latin_hypercube(rng, len(losses), 5), losses):
        points.append(make_point("bulk", uf, ur, uo, uq, loss, bdp_size(log_uniform(um, *BULK_BDP))))
    for uf, ur, uo, uq, um in latin_hypercube(rng, LONG_POINTS, 5):
        m = log_uniform(um, *LONG_BDP)
        owd_ms = round(ONE_WAY_MS[0] + uo * (ONE_WAY_MS[1] - ONE_WAY_MS[0]))
        fwd_max = MAX_BYTES * 8 / (m * 2 * owd_ms / 1000)
        points.append(make_point("long", uf, ur, uo, uq, 0.0, bdp_size(m), fwd_max))
    order = {"short": 0, "bulk": 1, "long": 2}
    points.sort(key=lambda p: (order[p.cls], p.bytes if p.cls == "short" else 0, p.fwd_bps))
    for i, p in enumerate(points):
        p.point = f"p{i:02d}"
    if satquic is not None:
        add_limits(points, satquic)
    return points


def direction_toml(rate_bps, owd_ms, queue_bytes, loss):
    lines = [
        f'rate = {{ kind = "constant", rate_bps = {rate_bps} }}',
        f'delay = {{ base = "{owd_ms}ms" }}',
        f"queue = {{ limit = {{ bytes = {queue_bytes} }} }}",
    ]
    if loss > 0:
        lines.append(f'loss = {{ kind = "bernoulli", plr = {loss} }}')
    return "\n".join(lines) + "\n"


def link_toml(p, seed, mirror):
    """The point's link file: `down` is forward (server to client, a download's data
    direction); the mirror swaps the directions, so that an upload (`-R`, the client
    sends over `up`) crosses the same path."""
    fwd = direction_toml(p.fwd_bps, p.owd_ms, p.fwd_queue_bytes, p.loss)
    ret = direction_toml(p.ret_bps, p.owd_ms, p.ret_queue_bytes, p.loss)
    down, up = (ret, fwd) if mirror else (fwd, ret)
    name = f"grid-{p.point}" + ("-mirror" if mirror else "")
    what = (
        f"forward {p.fwd_bps / 1e6:.2f} Mbit/s, return {p.ret_bps / 1e6:.2f} Mbit/s, "
        f"{p.owd_ms} ms each way, drop-tail {p.queue_bdp} BDP, loss {p.loss:g}"
    )
    side = "forward is up (an upload's data direction)" if mirror else "forward is down"
    return (
        f'name = "{name}"\n'
        f'description = "satquic grid point {p.point}: {what}; {side}"\n'
        f'source = "scripts/grid.py generate --seed {seed}"\n\n'
        f"[down]\n{down}\n[up]\n{up}"
    )


def write_points(path, points):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[x.name for x in fields(Point)])
        w.writeheader()
        for p in points:
            w.writerow(asdict(p))


def read_points(path):
    types = {x.name: x.type for x in fields(Point)}
    conv = {"int": int, "float": float, "str": str, int: int, float: float, str: str}
    with open(path, newline="") as f:
        return [Point(**{k: conv[types[k]](v) for k, v in row.items()}) for row in csv.DictReader(f)]
