"""Tests of the LEO grid's generator, runner and report (scripts/grid.py --kind leo,
grid_leo.py, grid_leo_report.py), without the satquic binary (the physical limits are
satquic's, tested in crates/lab/src/limit.rs):
python3 -m unittest discover -s scripts -p 'test_*.py' (scripts/test.sh runs them)."""

import csv
import io
import pathlib
import sys
import tempfile
import tomllib
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import grid  # noqa: E402
import grid_leo as gl  # noqa: E402
import grid_leo_report  # noqa: E402

LEO = pathlib.Path(__file__).resolve().parent.parent / "crates/lab/campaigns/leo-grid"
DRAWN = ("point", "cls", "case", "rate_scale", "rtt_add_ms", "queue_ms", "phase_s", "slot_seed", "bytes", "realtime")


class Points(unittest.TestCase):
    def setUp(self):
        self.draws = gl.generate_draws(grid.LEO_SEED)
        self.points = gl.read_points(LEO / "points.csv")

    def test_the_committed_points_are_the_seeds(self):
        self.assertEqual([{k: d[k] for k in DRAWN} for d in self.draws],
                         [{k: getattr(p, k) for k in DRAWN} for p in self.points])
        for p in self.points:
            self.assertEqual(p.link, gl.preset_string({k: getattr(p, k) for k in DRAWN}, p.fwd_queue_bytes, p.ret_queue_bytes))
        self.assertNotEqual([d["slot_seed"] for d in gl.generate_draws(41)], [d["slot_seed"] for d in self.draws])

    def test_points_cover_the_space(self):
        ps = self.points
        self.assertGreaterEqual(len(ps), 40)
        for p in ps:
            self.assertTrue(gl.RATE_SCALE[0] <= p.rate_scale <= gl.RATE_SCALE[1], p)
            self.assertTrue(gl.RTT_ADD_MS[0] <= p.rtt_add_ms <= gl.RTT_ADD_MS[1], p)
            self.assertTrue(gl.QUEUE_MS[0] <= p.queue_ms <= gl.QUEUE_MS[1], p)
            self.assertTrue(0 <= p.phase_s < gl.SLOT_S, p)
            self.assertTrue(100_000 <= p.bytes <= 1_000_000_000, p)
            self.assertGreater(p.phys_down_s, p.phys_up_s)
            self.assertGreaterEqual(p.fwd_queue_bytes, gl.MIN_QUEUE_PACKETS * gl.DATAGRAM)
        for case in gl.CASES:
            mine = [p for p in ps if p.case == case]
            self.assertGreaterEqual(len(mine), len(ps) // 3 - 1, case)
            self.assertEqual({p.cls for p in mine}, {"short", "bulk", "long"}, case)
            self.assertEqual(sum(p.realtime for p in mine), gl.REALTIME_PER_CASE, case)
        self.assertEqual({p.bytes for p in ps if p.cls == "short"}, set(gl.SHORT_BYTES))
        self.assertGreater(max(p.bytes for p in ps), 800e6)
        realtime = [p for p in ps if p.realtime]
        self.assertGreaterEqual(len(realtime), 10)
        self.assertTrue(all(p.bytes <= gl.REALTIME_MAX_BYTES for p in realtime))

    def test_link_files_are_the_points_and_mirrors_swap_the_directions(self):
        for p in self.points[::5]:
            link = tomllib.loads((LEO / "links" / f"{p.point}.toml").read_text())
            mirror = tomllib.loads((LEO / "links" / f"{p.point}-mirror.toml").read_text())
            self.assertEqual(link["slots"]["seed"], p.slot_seed)
            self.assertIn(p.link, link["source"])
            self.assertEqual(link["down"]["queue"]["limit"], {"bytes": p.fwd_queue_bytes})
            self.assertEqual(link["up"]["queue"]["limit"], {"bytes": p.ret_queue_bytes})
            self.assertEqual((link["down"], link["up"], link["slots"]), (mirror["up"], mirror["down"], mirror["slots"]))
            fwd = gl.quantile_median(link["down"]["rate"]["quantiles"], "rate_bps")
            self.assertAlmostEqual(fwd / 1e6, p.fwd_median_mbps, places=2)

    def test_toml_text_reads_back(self):
        spec = {"name": 'a "b"', "x": 1.5, "down": {"rate": {"kind": "slotted", "quantiles": [{"p": 0.0, "rate_bps": 7}]},
                                                 "delay": {"base": "3700us"}}, "slots": {"seed": 3, "phase": "1s"}}
        self.assertEqual(tomllib.loads(gl.toml_text(spec)), spec)


class Runner(unittest.TestCase):
    def test_a_leo_campaign_takes_the_points_link_and_mirror(self):
        p = gl.read_points(LEO / "points.csv")[7]
        variants = grid.parse_variants(grid.LEO_VARIANTS, [])
        self.assertEqual(list(variants), ["satellite", "cubic", "bbr3", "bbr"])
        up = tomllib.loads(grid.campaign_toml(p, "up", variants, grid.LEO_GRID_DIR))
        self.assertTrue(up["link"][0]["file"].endswith(f"leo-grid/links/{p.point}-mirror.toml"))
        self.assertEqual(up["workload"][0], {"kind": "upload", "bytes": p.bytes, "label": "up"})
        self.assertGreaterEqual(int(up["time_cap"].rstrip("s")), 4 * p.phys_up_s)
        down = tomllib.loads(grid.campaign_toml(p, "down", variants, grid.LEO_GRID_DIR))
        self.assertTrue(down["link"][0]["file"].endswith(f"leo-grid/links/{p.point}.toml"))

    def test_picoquic_and_explain_are_refused_on_the_leo_grid(self):
        with tempfile.TemporaryDirectory() as d:
            fake = pathlib.Path(d) / "satquic"
            fake.write_text("")
            argv = ["grid.py", "run", "--kind", "leo", "--out", d, "--satquic", str(fake), "--picoquic", str(fake)]
            with self.assertRaises(SystemExit) as e, redirect(argv):
                grid.main()
            self.assertEqual(e.exception.code, 2)
            (pathlib.Path(d) / "kind").write_text("leo\n")
            with self.assertRaises(SystemExit) as e, redirect(["grid.py", "explain", d, "p00"]):
                grid.main()
            self.assertEqual(e.exception.code, 2)


class Report(unittest.TestCase):
    def test_rows_compare_satellite_with_the_others_and_the_limit(self):
        points = gl.read_points(LEO / "points.csv")[:2]
        with tempfile.TemporaryDirectory() as d:
            out = pathlib.Path(d)
            gl.write_points(out / "points.csv", points)
            (out / "kind").write_text("leo\n")
            times = {"satellite": 2.0, "cubic": 4.0, "bbr3": 1.0, "bbr": None}
            queue_p95 = {"satellite": 15.0, "cubic": 40.0, "bbr3": 4.0, "bbr": ""}
            for p in points:
                for direction in ("up", "down"):
                    campaign = out / "satquic" / f"{p.point}-{direction}"
                    campaign.mkdir(parents=True)
                    with open(campaign / "runs.csv", "w", newline="") as f:
                        w = csv.DictWriter(f, fieldnames=["variant", "status", "completion_time_s", "packets_lost",
                                                          "drops_congestion", "drops_random", "exit_at_s",
                                                          "exit_reason", "handshake_time_s", "queue_p50_ms",
                                                          "queue_p95_ms", "run_id"])
                        w.writeheader()
                        for v, t in times.items():
                            w.writerow({"variant": v, "status": "completed" if t else "capped",
                                        "completion_time_s": t or "", "packets_lost": 3, "drops_congestion": 1,
                                        "drops_random": 2, "exit_at_s": 0.5, "exit_reason": "loss",
                                        "handshake_time_s": 0.05, "queue_p50_ms": 1.5,
                                        "queue_p95_ms": queue_p95[v], "run_id": f"{v}-1"})
            with redirect(["report"]):
                grid_leo_report.report(out)
            with open(out / "leo-grid.csv") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 2 * 2 * 4)
            sat = next(r for r in rows if r["variant"] == "satellite")
            self.assertEqual((float(sat["vs_cubic"]), float(sat["vs_bbr3"]), sat["vs_bbr"]), (0.5, 2.0, ""))
            self.assertAlmostEqual(float(sat["vs_phys"]), 2.0 / float(sat["phys_s"]), places=5)
            summary = (out / "summary.txt").read_text()
            self.assertIn("vs cubic: at least as fast on 2/2 (100 %)", summary)
            self.assertIn("vs bbr3: at least as fast on 0/2 (0 %)", summary)
            self.assertIn("satellite vs cubic, both directions: at least as fast on 4/4 (100 %)", summary)
            self.assertIn("bbr upload, 2 points, 2 not finished", summary)
            self.assertIn("| p00 |", (out / "grid.md").read_text())
            self.assertEqual((float(sat["queue_p50_ms"]), float(sat["queue_p95_ms"])), (1.5, 15.0))
            self.assertIn("satellite vs cubic download, p95 queueing delay: median 15.0 ms against 40.0 ms, "
                          "at most cubic's + 10 ms on 2/2 (100 %)", summary)
            self.assertIn("satellite vs bbr3 upload, p95 queueing delay: median 15.0 ms against 4.0 ms, "
                          "at most bbr3's + 10 ms on 0/2 (0 %)", summary)
            self.assertNotIn("vs bbr upload, p95", summary)


class redirect:
    """sys.argv set and stdout/stderr swallowed for the duration."""

    def __init__(self, argv):
        self.argv = argv

    def __enter__(self):
        self.saved = sys.argv, sys.stdout, sys.stderr
        sys.argv, sys.stdout, sys.stderr = self.argv, io.StringIO(), io.StringIO()

    def __exit__(self, *exc):
        sys.argv, sys.stdout, sys.stderr = self.saved


if __name__ == "__main__":
    unittest.main()
