#!/usr/bin/env python3
"""Writes the scorecard's scenario sets (crates/lab/campaigns/scorecard/): full.toml, every
scenario of every regime (issue 45); default.toml, a subset per regime drawn from it by a
fixed seed (so that nobody tunes to a hand-picked subset); quick.toml, the smoke set.

    scripts/scorecard-sets.py            # rewrites the three files (committed)
"""

import csv
import pathlib
import random

REPO = pathlib.Path(__file__).resolve().parent.parent
OUT = REPO / "crates/lab/campaigns/scorecard"
SEED = 45  # issue 45
# Scenarios per regime in the default set (timed to fit 10 minutes with --jobs 2).
DEFAULT_SIZES = {"geo-lossless": 30, "geo-loss": 16, "startup": 8, "resumption": 7, "beside": 30, "leo": 40}
REGIMES = ["geo-lossless", "geo-loss", "startup", "resumption", "beside", "leo"]
CAP_FACTOR, MIN_CAP_S = 4, 60  # the grid's time cap: 4x the limit, at least 60 s
BEAM_PATHS = ["geo-viasat", "beside:beam-120m-1bdp"]
RPM_PATHS = ["starlink-quiet", "starlink-busy", "starlink-moving"]
# 4 users always on, a Poisson 0.5 object/s each: about 60 objects in the 30 s window
RPM_BEAM = {"users": 4, "bulk": 1, "min_object": "100kB", "max_object": "4MB", "off": "0s", "objects_per_s": 0.5}


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def s(**kw):
    return kw


def full():
    out = []
    for p in rows(REPO / "crates/lab/campaigns/grid/points.csv"):
        lossy = float(p["loss"]) > 0
        for d in ("up", "down"):
            phys = float(p[f"phys_{d}_s"])
            out.append(s(regime="geo-loss" if lossy else "geo-lossless", name=f"grid-{p['point']}-{d}",
                         link=f"grid:{p['point']}", kind="upload" if d == "up" else "download",
                         bytes=int(p["bytes"]), time_cap_s=max(MIN_CAP_S, int(CAP_FACTOR * phys) + 1)))
    # issue 44's table and the suite's loss rows
    out += [
        s(regime="geo-loss", name="suite-loss", link="sat-250-3:loss=64", kind="upload", bytes=100_000_000, time_cap_s=60),
        s(regime="geo-loss", name="suite-preemptive-fc", link="sat-20-2:loss=64", kind="upload", bytes=10_000_000, rwnd=750_000, time_cap_s=60),
        s(regime="geo-loss", name="qir-satloss-10MiB", link="qir-satloss", kind="download", bytes=10 * 2**20, time_cap_s=60),
    ]
    for plr in ("0.0001", "0.001", "0.01"):
        out.append(s(regime="geo-loss", name=f"geo-viasat-plr{plr}", link=f"geo-viasat:plr={plr}", kind="download",
                     bytes=100_000_000, time_cap_s=120))
    # start-up and short flows, with cubic and bbr3 beside
    su = [
        ("suite-basic", "sat-250-3", "upload", 100_000_000),
        ("suite-jitter", "sat-250-3:jitter=3ms", "upload", 100_000_000),
        ("suite-medium", "sat-50-10", "upload", 100_000_000),
        ("qir-sat-100kB", "qir-sat", "download", 100_000),
        ("qir-sat-1MB", "qir-sat", "download", 1_000_000),
        ("qir-sat-10MiB", "qir-sat", "download", 10 * 2**20),
        ("thesis-asym-99-10MiB", "thesis-asym-99", "download", 10 * 2**20),
        ("geo-viasat-200M", "geo-viasat", "download", 200_000_000),
    ]
    for name, link, kind, b in su:
        out.append(s(regime="startup", name=name, link=link, kind=kind, bytes=b, time_cap_s=60, refs=["cubic", "bbr3"]))
    for name, link, kind, b in [su[0], su[1], su[2], su[5], su[7],
                                ("suite-loss", "sat-250-3:loss=64", "upload", 100_000_000),
                                ("qir-satloss-10MiB", "qir-satloss", "download", 10 * 2**20)]:
        out.append(s(regime="resumption", name=f"{name}-resumed", link=link, kind=kind, bytes=b, time_cap_s=60,
                     resume_after="10s"))
    # beside other traffic: satquic beside --full's pairs involving the candidate
    paths = ["thesis-sat", "qir-sat", "geo-viasat", "grid:p02", "grid:p10", "leo", "starlink-busy", "lte"]
    for link in paths:
        for other in ("cubic", "bbr3", "newreno", "CANDIDATE"):
            for role in ("latecomer", "incumbent"):
                if other == "CANDIDATE" and role == "incumbent":
                    continue  # the candidate beside itself is one pair
                for stagger in (0, 5, 20):
                    tag = link.replace("grid:", "grid-")
                    out.append(s(regime="beside", name=f"pair-{tag}-{other.lower()}-{role}-{stagger}s", link=link,
                                 kind="pair", other=other, role=role, stagger_s=stagger, duration_s=60,
                                 time_cap_s=85, seeds=[1, 2, 3]))
    for seed in (1, 2, 3):
        out.append(s(regime="beside", name=f"thesis-sat-mix-seed{seed}", link="thesis-sat", kind="mix", other="bbr3",
                     bytes=60_000_000, stagger_s=10, time_cap_s=150, seeds=[seed]))
    # the busy beam: satquic beside --full's (crates/lab/campaigns/beside/beam.toml), the bulk
    # flows the candidate's, then cubic's, on both beam paths
    for link in BEAM_PATHS:
        out.append(s(regime="beside", name="beam-" + link.replace("beside:beam-", ""), link=link, kind="beam",
                     duration_s=60, time_cap_s=90, refs=["cubic"], seeds=[1, 2, 3],
                     beam={"users": 24, "bulk": 3, "bulk_stagger": "10s"}))
    for p in rows(REPO / "crates/lab/campaigns/leo-grid/points.csv"):
        for d in ("up", "down"):
            phys = float(p[f"phys_{d}_s"])
            out.append(s(regime="leo", name=f"leo-{p['point']}-{d}", link=f"leo:{p['point']}",
                         kind="upload" if d == "up" else "download", bytes=int(p["bytes"]),
                         time_cap_s=max(MIN_CAP_S, int(CAP_FACTOR * phys) + 1), refs=["cubic", "bbr3"]))
    # LEO responsiveness: the candidate's short objects (own connections, 100 kB to 4 MB)
    # beside one bulk flow of cubic or bbr3, then cubic's and bbr3's objects in the same role
    for link in RPM_PATHS:
        for bulk in ("cubic", "bbr3"):
            out.append(s(regime="leo", name=f"rpm-{link}-{bulk}", link=link, kind="rpm", other=bulk,
                         duration_s=30, time_cap_s=45, refs=["cubic", "bbr3"], seeds=[1, 2, 3], beam=RPM_BEAM))
    return out


def toml(v):
    if isinstance(v, str):
        return '"' + v + '"'
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(toml(x) for x in v) + "]"
    return str(v)


def write(name, scenarios, header):
    lines = [f"# {l}" if l else "#" for l in header] + [""]
    for sc in scenarios:
        lines.append("[[scenario]]")
        lines += [f"{k} = {toml(v)}" for k, v in sc.items()]
        lines.append("")
    (OUT / name).write_text("\n".join(lines))


def main():
    everything = full()
    by = {r: [x for x in everything if x["regime"] == r] for r in REGIMES}
    rng = random.Random(SEED)
    default, quick = [], []
    for r in REGIMES:
        pool = by[r]
        if r == "leo":
            pool = [x for x in pool if x["kind"] != "rpm"]
        if r == "beside":  # the default pairs: one seed, 20 s flows would change them: keep 60 s, seed 1
            pool = [dict(x, seeds=[1]) for x in pool if x["kind"] == "pair"] + [x for x in pool if x["kind"] == "mix"][:1]
        pick = sorted(rng.sample(range(len(pool)), min(DEFAULT_SIZES[r], len(pool))))
        default += [pool[i] for i in pick]
    # The beam and LEO responsiveness, seed 1 of each, after the draws above (so that they
    # stay what they were before these scenarios existed).
    default += [dict(x, seeds=[1]) for x in everything if x["kind"] in ("beam", "rpm")]
    default.sort(key=lambda x: REGIMES.index(x["regime"]))
    quick_names = {"grid-p02-down", "grid-p01-up", "qir-sat-1MB", "qir-sat-10MiB-resumed",
                   "pair-qir-sat-cubic-latecomer-5s", "leo-p00-down", "beam-geo-viasat",
                   "rpm-starlink-busy-cubic"}
    for x in everything:
        if x["name"] in quick_names:
            if x["kind"] == "pair":
                x = dict(x, seeds=[1], duration_s=20, time_cap_s=30)
            elif x["kind"] == "beam":  # as satquic beside --quick's: a 30 s window, one seed
                x = dict(x, seeds=[1], duration_s=30, time_cap_s=45)
            elif x["kind"] == "rpm":
                x = dict(x, seeds=[1])
            quick.append(x)
    gen = "Written by scripts/scorecard-sets.py (do not edit)"
    write("full.toml", everything, [f"The scorecard's --full set: every scenario of every regime. {gen}.",
                                    "CANDIDATE in a pair is the spec being judged."])
    write("default.toml", default, [f"The scorecard's default set: drawn from full.toml by seed {SEED}, per regime:",
                                    ", ".join(f"{r} {n}" for r, n in DEFAULT_SIZES.items()) +
                                    " (beside: seed 1 of each pair),",
                                    "and seed 1 of the busy beam's and LEO responsiveness's scenarios. " + gen + "."])
    write("quick.toml", quick, [f"The scorecard's --quick smoke set: one scenario per regime. {gen}."])


if __name__ == "__main__":
    main()
