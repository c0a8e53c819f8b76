"""Tests of the satellite grid's generator and runner (scripts/grid*.py):
python3 -m unittest discover -s scripts -p 'test_*.py' (scripts/test.sh runs them)."""

import io
import pathlib
import subprocess
import sys
import tempfile
import tomllib
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import grid  # noqa: E402
import grid_picoquic  # noqa: E402
import grid_points as gp  # noqa: E402
import grid_report  # noqa: E402

GRID = pathlib.Path(__file__).resolve().parent.parent / "crates/lab/campaigns/grid"


class Generator(unittest.TestCase):
    def setUp(self):
        self.points = gp.generate(grid.DEFAULT_SEED)

    def test_committed_points_are_the_seeds(self):
        # The limits are satquic's (grid.py generate asks `satquic presets --limits`);
        # crates/lab/src/limit.rs checks the committed ones against its model.
        for p, c in zip(self.points, gp.read_points(GRID / "points.csv")):
            self.assertIsNone(p.phys_up_s)
            p.phys_up_s, p.phys_down_s = c.phys_up_s, c.phys_down_s
        with tempfile.TemporaryDirectory() as d:
            gp.write_points(pathlib.Path(d) / "points.csv", self.points)
            self.assertEqual((pathlib.Path(d) / "points.csv").read_text(), (GRID / "points.csv").read_text())
        for p in self.points:
            for mirror in (False, True):
                name = p.point + ("-mirror" if mirror else "") + ".toml"
                self.assertEqual((GRID / "links" / name).read_text(), gp.link_toml(p, grid.DEFAULT_SEED, mirror))

    def test_another_seed_draws_other_points(self):
        self.assertNotEqual([p.fwd_bps for p in gp.generate(31)], [p.fwd_bps for p in self.points])

    def test_points_cover_the_issues_space(self):
        ps = self.points
        self.assertGreaterEqual(len(ps), 60)
        for p in ps:
            self.assertTrue(10e6 <= p.fwd_bps <= 1000e6, p)
            self.assertTrue(1e6 <= p.ret_bps <= min(50e6, p.fwd_bps), p)
            self.assertTrue(250 <= p.owd_ms <= 450, p)
            self.assertTrue(0.5 <= p.queue_bdp <= 8, p)
            self.assertIn(p.loss, (0.0, 0.001, 0.01))
            self.assertLessEqual(p.bytes, gp.MAX_BYTES)
        self.assertGreater(sum(p.loss == 0 for p in ps), len(ps) / 2)
        self.assertEqual({p.bytes for p in ps if p.cls == "short"}, set(gp.SHORT_BYTES))
        self.assertGreaterEqual(sum(p.loss == 0 and p.size_bdp >= 50 for p in ps), 12)
        self.assertGreaterEqual(max(p.size_bdp for p in ps), 20)
        # Both ends of every range are reached (a Latin hypercube's first and last strata).
        self.assertLess(min(p.fwd_bps for p in ps), 12e6)
        self.assertGreater(max(p.fwd_bps for p in ps), 800e6)

    def test_a_mirror_is_its_link_with_the_directions_swapped(self):
        for p in self.points[::7]:
            link = tomllib.loads(gp.link_toml(p, 30, False))
            mirror = tomllib.loads(gp.link_toml(p, 30, True))
            self.assertEqual(link["down"], mirror["up"])
            self.assertEqual(link["up"], mirror["down"])
            self.assertEqual(link["down"]["queue"]["limit"], {"bytes": p.fwd_queue_bytes})


class Rates(unittest.TestCase):
    def test_picoquic_link_times_follow_its_code(self):
        # picosec_per_byte = 8e6 / k; (ps * 1440) >> 20 microseconds.
        self.assertEqual(gp.picoquic_packet_us(250), 43)  # 32000 * 1440 / 2^20 = 43.9
        self.assertEqual(gp.picoquic_packet_us(1000), 10)  # 10.99, floored
        self.assertEqual(gp.picoquic_packet_us(10), 1098)

    def test_satquic_gets_picoquics_goodput(self):
        for k in (1, 10, 250, 1000):
            sat_goodput = gp.satquic_rate_bps(k) * gp.SATQUIC_PAYLOAD / (gp.SATQUIC_DATAGRAM + gp.IP_UDP_OVERHEAD)
            self.assertAlmostEqual(sat_goodput / gp.goodput_bps(k), 1.0, places=6)
        self.assertAlmostEqual(gp.satquic_rate_bps(250) / 1e6, 272.8, places=1)

    def test_nearest_k_stays_in_range(self):
        k = gp.nearest_k(1000e6, 10e6, 1000e6)
        self.assertLessEqual(gp.satquic_rate_bps(k), 1000e6)
        self.assertGreater(gp.satquic_rate_bps(k), 900e6)
        with self.assertRaises(ValueError):
            gp.nearest_k(5e6, 1e3, 2e3)


class Limits(unittest.TestCase):
    def test_limits_are_satquics(self):
        # A stand-in for satquic that prints what `presets --limits` prints and records
        # what it was asked.
        with tempfile.TemporaryDirectory() as d:
            fake = pathlib.Path(d) / "satquic"
            fake.write_text(f"#!/bin/sh\necho \"$@\" > {d}/argv\n"
                            "printf 'bytes,up_s,down_s,serialization_s\\n100000,0.8976788055504573,1.1706788055504573,"
                            "0.07867880555045728\\n'\n")
            fake.chmod(0o755)
            p = gp.read_points(GRID / "points.csv")[0]
            p.phys_up_s = p.phys_down_s = None
            gp.add_limits([p], fake)
            self.assertEqual((p.phys_up_s, p.phys_down_s), (0.897679, 1.170679))
            argv = (pathlib.Path(d) / "argv").read_text().split()
            self.assertEqual(argv[:2] + argv[3:], ["presets", "--limits", "--bytes", "100000"])
            self.assertEqual(gp.point_limits(fake, p)[2], 0.07867880555045728)
            fake.write_text("#!/bin/sh\necho 'satquic: --limits x: no' >&2\nexit 2\n")
            with self.assertRaises(RuntimeError):
                gp.add_limits([p], fake)


class Runner(unittest.TestCase):
    def test_campaign_holds_the_point_and_the_variants(self):
        p = gp.read_points(GRID / "points.csv")[40]
        variants = grid.parse_variants("satellite", ["x=cubic+search:v2,lower-cwnd;ack_frequency=16:25ms;pto_probe_data=true"])
        up = tomllib.loads(grid.campaign_toml(p, "up", variants))
        self.assertTrue(up["link"][0]["file"].endswith(f"{p.point}-mirror.toml"))
        self.assertEqual(up["workload"][0], {"kind": "upload", "bytes": p.bytes, "label": "up"})
        self.assertEqual(up["sender_cap"], "none")
        self.assertEqual([v["label"] for v in up["variant"]], ["satellite", "x"])
        self.assertEqual(up["variant"][1]["cc"], "cubic+search:v2,lower-cwnd")
        self.assertEqual(up["variant"][1]["pto_probe_data"], True)
        self.assertEqual(up["variant"][1]["mtu_discovery"], True)
        self.assertGreaterEqual(int(up["time_cap"].rstrip("s")), 4 * p.phys_up_s)
        down = tomllib.loads(grid.campaign_toml(p, "down", variants))
        self.assertEqual(down["workload"][0]["kind"], "download")
        self.assertTrue(down["link"][0]["file"].endswith(f"{p.point}.toml"))

    def test_unknown_variants_are_refused(self):
        for names, custom in (("satelite", []), ("", ["x"]), ("", ["x=cubic;mtu"]), ("", [])):
            with self.assertRaises(SystemExit) as e, redirect_stderr():
                grid.parse_variants(names, custom)
            self.assertEqual(e.exception.code, 2)


class CommandLine(unittest.TestCase):
    """Bad paths and arguments: one line on stderr, exit code 2, no traceback, and nothing
    written into --out before the arguments are known to be good."""

    def grid(self, *args):
        script = pathlib.Path(__file__).resolve().parent / "grid.py"
        return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)

    def assert_usage(self, r, *words):
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        for word in words:
            self.assertIn(word, r.stderr)

    def test_an_out_that_is_no_directory_or_lacks_its_parent_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            a_file = pathlib.Path(d) / "file"
            a_file.write_text("x")
            for out, why in ((a_file, "not a directory"), ("/dev/null", "not a directory"),
                             (pathlib.Path(d) / "missing/out", "does not exist")):
                self.assert_usage(self.grid("run", "--out", str(out), "--satquic", sys.executable), why)
                self.assert_usage(self.grid("generate", "--out", str(out)), why)

    def test_a_bad_picoquic_is_refused_before_anything_is_written(self):
        with tempfile.TemporaryDirectory() as d:
            out = pathlib.Path(d) / "out"
            r = self.grid("run", "--out", str(out), "--satquic", sys.executable,
                          "--picoquic", str(pathlib.Path(d) / "no-picoquic"))
            self.assert_usage(r, "--picoquic")
            self.assertFalse(out.exists())
            out.mkdir()
            r = self.grid("run", "--out", str(out), "--satquic", sys.executable,
                          "--picoquic", str(pathlib.Path(d) / "no-picoquic"))
            self.assert_usage(r, "--picoquic")
            self.assertEqual(list(out.iterdir()), [])

    def test_explain_needs_a_run_directory(self):
        with tempfile.TemporaryDirectory() as d:
            self.assert_usage(self.grid("explain", str(pathlib.Path(d) / "MISSING"), "p01"), "points.csv")
            (pathlib.Path(d) / "points.csv").write_text((GRID / "points.csv").read_text())
            self.assert_usage(self.grid("explain", d, "p99"), "no point p99")
            r = self.grid("explain", d, "p01")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("no run of p01", r.stdout)


class PicoquicQlog(unittest.TestCase):
    QLOG = """{ "qlog_version": "draft-00", "traces": [
[0, "transport", "datagram_sent", { "byte_length": 1252}],
[250000, "recovery", "packet_lost", {
    "packet_type" : "initial",
    "packet_number" : 0,
    "trigger": "timer",
    "header": {
        "packet_type" : "initial"}}],
[602792, "recovery", "congestion_state_updated", {"old": "0","new": "7","cc_param": 0}],
[602792, "recovery", "metrics_updated", {"cwnd": 92467,"bytes_in_flight": 391,"smoothed_rtt": 602005}],
[602800, "recovery", "metrics_updated", {"cwnd": 92468,"bytes_in_flight": 392,"smoothed_rtt": 602005}],
[700000, "recovery", "packet_lost", {
    "packet_type" : "1RTT",
    "packet_number" : 56537,
    "trigger": "repeat",
    "header": {"packet_type" : "1RTT"}}],
[700001, "transport", "datagram_sent", { "byte_length": 1440}],
"""

    def test_losses_states_and_a_series_row_per_10_ms(self):
        with tempfile.NamedTemporaryFile("w", suffix=".qlog", delete=False) as f:
            f.write(self.QLOG)
        stats, series = grid_picoquic.parse_qlog(f.name)
        pathlib.Path(f.name).unlink()
        self.assertEqual(stats["lost"], {"initial:timer": 1, "1RTT:repeat": 1})
        self.assertEqual(stats["datagrams"], 2)
        self.assertEqual(stats["states"], [[0.602792, 7]])
        self.assertEqual(series, [[0.602792, 92467, 391, 602005]])


class Report(unittest.TestCase):
    def test_heatmaps_are_skipped_without_matplotlib(self):
        saved = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "matplotlib"}
        sys.modules["matplotlib"] = None  # its import now raises ImportError
        try:
            with tempfile.TemporaryDirectory() as out, redirect_stderr() as err:
                drawn = grid_report.heatmaps(pathlib.Path(out), [], ["satellite"])
                self.assertEqual(list(pathlib.Path(out).iterdir()), [])
            self.assertFalse(drawn)
            self.assertIn("matplotlib is not installed", err.getvalue())
        finally:
            del sys.modules["matplotlib"]
            sys.modules.update(saved)


class redirect_stderr:
    def __enter__(self):
        self.old, sys.stderr = sys.stderr, io.StringIO()
        return sys.stderr

    def __exit__(self, *exc):
        sys.stderr = self.old


if __name__ == "__main__":
    unittest.main()
