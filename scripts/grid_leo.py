"""The LEO grid's points: Starlink-like paths drawn from a fixed seed over the presets'
parameter ranges, their link files, their physical limits, and the report of a run
(`scripts/grid.py --kind leo generate|run|report`; crates/lab/campaigns/leo-grid/README.md
says why each rule is what it is).

A point is one of the three Starlink presets (crates/link/src/presets/starlink.rs) with
its parameters drawn, written as the preset string (`starlink-busy:phase=3.217s,...`,
what `satquic link --link` takes) and as a link file, plus a transfer size. The
schedule's seed is fixed per point, so a point is the same sky in every run, simulated
or real time, download or upload, and its physical limit follows from its slots
(`satquic presets --slots FILE`): the handshake's RTT, the request's one way (downloads),
the bytes at each slot's capacity (none in an outage), the last byte's one way.

Points come in three classes, each a Latin hypercube over (case, rate scale, extra RTT,
queue depth, phase), so a few dozen points cover the space evenly:

- short: 100 kB and 1 MB, where the completion time is start-up;
- bulk: 3 MB to 300 MB, log-uniform;
- long: 300 MB to 1 GB, log-uniform.
"""

import bisect
import csv
import random
import subprocess
import tomllib
from dataclasses import asdict, dataclass, fields

import grid_points

# --- the space (issue 40, "Build" item 2) ---
CASES = ("starlink-quiet", "starlink-busy", "starlink-moving")
# Every slot rate times this (log-uniform): a cell emptier or busier than the case's
# measurements, as far as the sources' own spread goes (per slot 10-500 Mbit/s down).
RATE_SCALE = (0.6, 1.5)
# A server this far beyond the PoP (uniform, ms of RTT): 0 is a server at the PoP, 30 one
# across Europe (Michel et al. reach European anchors at a median of 50 ms against the
# PoP's ~21).
RTT_ADD_MS = (0.0, 30.0)
# Queue depth at the median slot rate, each direction (log-uniform, ms): from what
# Starlink's 2024 figures leave (p99 below 65 ms, median 33) to its pre-2024 tail (p99
# above 150 ms, median 48.5).
QUEUE_MS = (20.0, 150.0)
SLOT_S = 15.0
SHORT_BYTES = (100_000, 1_000_000)
SHORT_PER_SIZE = 9  # three per case
BULK_POINTS = 24
BULK_BYTES = (3e6, 300e6)
LONG_POINTS = 9
LONG_BYTES = (300e6, 1e9)
# A queue holds at least this many full-size packets.
MIN_QUEUE_PACKETS = 10
# Points marked for the real-time runs (item 3): this many of each case (its first 100 kB
# and 1 MB points, its largest bulk point up to REALTIME_MAX_BYTES and its smallest), so
# that three runs of every peer fit an evening and every case is seen from start-up to
# several slots.
REALTIME_PER_CASE = 4
REALTIME_MAX_BYTES = 200_000_000
DATAGRAM = grid_points.SATQUIC_DATAGRAM + grid_points.IP_UDP_OVERHEAD  # bytes on the link


@dataclass
class Point:
    point: str
    cls: str
    case: str
    link: str
    rate_scale: float
    rtt_add_ms: float
    queue_ms: float
    phase_s: float
    slot_seed: int
    fwd_median_mbps: float
    ret_median_mbps: float
    rtt_median_ms: float
    fwd_queue_bytes: int
    ret_queue_bytes: int
    bytes: int
    phys_up_s: float
    phys_down_s: float
    realtime: int


def quantile_median(quantiles, key):
    """The median of a [{p, key}] table (linear in between, as the link model draws)."""
    ps = [q["p"] for q in quantiles]
    i = bisect.bisect_right(ps, 0.5)
    lo, hi = quantiles[i - 1], quantiles[min(i, len(quantiles) - 1)]
    if hi["p"] == lo["p"]:
        return float(lo[key])
    return lo[key] + (hi[key] - lo[key]) * (0.5 - lo["p"]) / (hi["p"] - lo["p"])


def duration_ms(text):
    """A satquic duration string in ms."""
    for unit, scale in (("us", 1e-3), ("ms", 1.0), ("ns", 1e-6), ("s", 1e3)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(f"duration {text!r}")


class Satquic:
    """The satquic binary, for what only the Rust lab knows: a preset's tables, a link
    file, a transfer's physical limit."""

    def __init__(self, binary):
        self.binary = str(binary)

    def run(self, *args):
        r = subprocess.run([self.binary, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"satquic {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def link(self, preset):
        return tomllib.loads(self.run("presets", "--toml", preset))

    def limits(self, link_file, nbytes):
        """(upload, download) limits of `nbytes` over the link, from satquic's model, which
        reads the link's slot schedule (crates/lab/src/limit.rs, slotted_limits): the
        handshake's RTT at the start, a download's request one way, the data at each slot's
        rate in full-size datagrams, the last byte's one way."""
        return grid_points.satquic_limits(self.binary, link_file, [nbytes])[nbytes][:2]


def latin_hypercube(rng, n, dims):
    return grid_points.latin_hypercube(rng, n, dims)


def log_uniform(u, lo, hi):
    return grid_points.log_uniform(u, lo, hi)


def draw(rng, cls, n, size_rule):
    """n points of a class: the case stratified (each case a third of the strata), the
    rest a Latin hypercube."""
    points = []
    for u_case, u_rate, u_rtt, u_queue, u_phase, u_size in latin_hypercube(rng, n, 6):
        points.append({
            "cls": cls,
            "case": CASES[min(len(CASES) - 1, int(u_case * len(CASES)))],
            "rate_scale": round(log_uniform(u_rate, *RATE_SCALE), 3),
            "rtt_add_ms": round(RTT_ADD_MS[0] + u_rtt * (RTT_ADD_MS[1] - RTT_ADD_MS[0]), 1),
            "queue_ms": round(log_uniform(u_queue, *QUEUE_MS), 1),
            "phase_s": round(u_phase * SLOT_S, 3),
            "slot_seed": rng.randrange(1, 1 << 31),
            "bytes": size_rule(u_size),
        })
    return points


def generate_draws(seed):
    """The points' parameters for `seed` (pure Python: no binary needed), in name order."""
    rng = random.Random(seed)
    draws = []
    for size in SHORT_BYTES:
        draws += draw(rng, "short", SHORT_PER_SIZE, lambda _u, s=size: s)
    mb = lambda lo, hi: (lambda u: round(log_uniform(u, lo, hi) / 1e6) * 1_000_000)  # noqa: E731
    draws += draw(rng, "bulk", BULK_POINTS, mb(*BULK_BYTES))
    draws += draw(rng, "long", LONG_POINTS, mb(*LONG_BYTES))
    order = {"short": 0, "bulk": 1, "long": 2}
    draws.sort(key=lambda d: (order[d["cls"]], d["bytes"], CASES.index(d["case"]), d["rate_scale"]))
    for i, d in enumerate(draws):
        d["point"] = f"p{i:02d}"
    mark_realtime(draws)
    return draws


def mark_realtime(draws):
    """REALTIME_PER_CASE points of each case for the real-time runs: its first 100 kB and
    1 MB points (in name order), then its largest bulk point up to REALTIME_MAX_BYTES and
    its smallest."""
    for d in draws:
        d["realtime"] = 0
    for case in CASES:
        mine = [d for d in draws if d["case"] == case]
        picks = [next(d for d in mine if d["bytes"] == s) for s in SHORT_BYTES if any(d["bytes"] == s for d in mine)]
        bulk = [d for d in mine if d["cls"] == "bulk" and d["bytes"] <= REALTIME_MAX_BYTES]
        picks += [bulk[-1], bulk[0]] if bulk else []
        for d in picks[:REALTIME_PER_CASE]:
            d["realtime"] = 1


def preset_string(d, fwd_queue, ret_queue):
    return (f"{d['case']}:phase={d['phase_s']:g}s,slot-seed={d['slot_seed']},rate-scale={d['rate_scale']:g},"
            f"rtt-add={d['rtt_add_ms']:g}ms,queue={fwd_queue},up-queue={ret_queue}")


def queue_bytes(median_bps, queue_ms):
    return max(MIN_QUEUE_PACKETS * DATAGRAM, round(median_bps * queue_ms / 8000))


def generate(seed, satquic, links_dir):
    """The grid's points for `seed`, with their link files written to `links_dir`
    (pNN.toml, down = forward; pNN-mirror.toml, up = forward)."""
    tables = {case: satquic.link(case) for case in CASES}
    points = []
    for d in generate_draws(seed):
        t = tables[d["case"]]
        fwd = quantile_median(t["down"]["rate"]["quantiles"], "rate_bps") * d["rate_scale"]
        ret = quantile_median(t["up"]["rate"]["quantiles"], "rate_bps") * d["rate_scale"]
        rtts = [{"p": q["p"], "ms": duration_ms(q["rtt"])} for q in t["slots"]["rtt"]]
        fq, rq = queue_bytes(fwd, d["queue_ms"]), queue_bytes(ret, d["queue_ms"])
        link = preset_string(d, fq, rq)
        spec = satquic.link(link)
        spec["name"] = f"leo-grid-{d['point']}"
        spec["description"] = (
            f"LEO grid point {d['point']}: {d['case']}, slot rates x{d['rate_scale']:g}, a server "
            f"{d['rtt_add_ms']:g} ms beyond the PoP, queues of {d['queue_ms']:g} ms at the median rate; forward is down")
        spec["source"] = f"scripts/grid.py generate --kind leo --seed {seed}: {link}"
        path = links_dir / f"{d['point']}.toml"
        path.write_text(toml_text(spec))
        (links_dir / f"{d['point']}-mirror.toml").write_text(toml_text(mirrored(spec)))
        up, down = satquic.limits(path, d["bytes"])
        points.append(Point(
            point=d["point"], cls=d["cls"], case=d["case"], link=link, rate_scale=d["rate_scale"],
            rtt_add_ms=d["rtt_add_ms"], queue_ms=d["queue_ms"], phase_s=d["phase_s"], slot_seed=d["slot_seed"],
            fwd_median_mbps=round(fwd / 1e6, 3), ret_median_mbps=round(ret / 1e6, 3),
            rtt_median_ms=round(quantile_median(rtts, "ms") + d["rtt_add_ms"], 3),
            fwd_queue_bytes=fq, ret_queue_bytes=rq, bytes=d["bytes"],
            phys_up_s=round(up, 6), phys_down_s=round(down, 6), realtime=d["realtime"],
        ))
    return points


def mirrored(spec):
    """The same path seen from the other end: down and up swapped (the slot schedule is
    the link's and splits its RTT evenly, so it stays)."""
    out = dict(spec)
    out["down"], out["up"] = spec["up"], spec["down"]
    out["name"] = spec["name"] + "-mirror"
    out["description"] = spec["description"].replace("forward is down", "forward is up (an upload's data direction)")
    return out


# --- a small TOML writer for link files (tomllib only reads) ---

def toml_scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(toml_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_scalar(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {v!r}")


def toml_text(spec):
    """A link spec as TOML: top-level values, then one table per direction and [slots],
    each value inline (the form of the GEO grid's link files)."""
    lines = [f"{k} = {toml_scalar(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    for key in ("down", "up", "slots"):
        if key in spec:
            lines += ["", f"[{key}]"] + [f"{k} = {toml_scalar(v)}" for k, v in spec[key].items()]
    return "\n".join(lines) + "\n"


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
