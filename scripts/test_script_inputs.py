"""Bad input to the measurement scripts gets one line and exit 2, never a traceback or a
hang: scripts/beside-realtime.py, scripts/leo_calibrate.py, scripts/bench-tables.py and
scripts/grid.py.
Only what they refuse before starting anything (no satquic binary needed; the Python
interpreter passes their `--bin`/`--satquic` check). `python3 -m unittest discover -s scripts -p 'test_*.py'`."""

import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = pathlib.Path(__file__).resolve().parent


def run(script, *args):
    """(exit code, stderr lines) of one script run, which must end within 20 s."""
    r = subprocess.run([sys.executable, str(SCRIPTS / script), *args], capture_output=True,
                       text=True, timeout=20)
    return r.returncode, r.stderr.splitlines()


def assert_refused(test, script, prefix, *args):
    """`script ARGS` exits 2 with one line on stderr that starts with `prefix`; the line."""
    code, err = run(script, *args)
    test.assertEqual(code, 2, err)
    test.assertEqual(len(err), 1, err)
    test.assertTrue(err[0].startswith(prefix), err)
    return err[0]


class BesideRealtime(unittest.TestCase):
    def refused(self, *args):
        return assert_refused(self, "beside-realtime.py", "beside-realtime: ", "--bin",
                              sys.executable, *args)

    def test_an_out_that_is_a_file_is_refused(self):
        with tempfile.NamedTemporaryFile() as f:
            self.assertIn("not a directory", self.refused("--out", f.name))

    def test_an_out_whose_parent_is_missing_is_refused_and_not_made(self):
        with tempfile.TemporaryDirectory() as d:
            out = pathlib.Path(d) / "missing" / "out"
            self.refused("--out", str(out), "--stagger", "0", "--duration", "1")
            self.assertFalse(out.parent.exists())

    def test_a_latecomer_template_with_an_unknown_field_is_refused(self):
        self.assertIn("{host}", self.refused("--latecomer-cmd", "iperf3 -c {server}"))
        self.refused("--latecomer-cmd", "iperf3 -c {")

    def test_negative_times_are_refused(self):
        self.refused("--stagger", "-1")
        self.refused("--tail", "-1")
        self.refused("--duration", "0")

    def test_a_missing_binary_is_refused(self):
        assert_refused(self, "beside-realtime.py", "beside-realtime: ", "--bin",
                       "/nonexistent/satquic")

    def test_an_empty_latecomer_command_is_refused(self):
        self.assertIn("empty command", self.refused("--latecomer-cmd", ""))
        self.assertIn("empty command", self.refused("--latecomer-cmd", "  "))
        self.assertIn("empty command", self.refused("--latecomer-server-cmd", ""))

    def test_a_lock_that_is_a_fifo_or_a_directory_is_refused_without_blocking(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = pathlib.Path(d) / "lock"
            os.mkfifo(fifo)
            self.assertIn("a FIFO", self.refused("--lock", str(fifo)))
            self.assertIn("a directory", self.refused("--lock", d))
            self.refused("--lock", "")


class Grid(unittest.TestCase):
    def test_a_satquic_that_is_no_program_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            line = assert_refused(self, "grid.py", "grid.py: ", "run", "--out",
                                  str(pathlib.Path(d) / "out"), "--satquic", "/etc/passwd")
            self.assertIn("not executable", line)
            script = pathlib.Path(d) / "satquic"
            script.write_bytes(b"\x7fELF not a program")
            script.chmod(0o755)
            assert_refused(self, "grid.py", "grid.py: ", "run", "--out",
                           str(pathlib.Path(d) / "out"), "--satquic", str(script))


class LeoCalibrate(unittest.TestCase):
    def refused(self, data_path):
        assert_refused(self, "leo_calibrate.py", "leo_calibrate.py: --autobahn ", "--satquic",
                       sys.executable, "--autobahn", str(data_path))

    def test_a_csv_without_the_columns_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            p = pathlib.Path(d) / "throughput.csv"
            p.write_text("a,b\n1,2\n")
            self.refused(p)
            p.write_text("timestamp_start_dl,download,upload\nyesterday,1,2\n")
            self.refused(p)

    def test_a_file_that_is_no_zip_or_text_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            z = pathlib.Path(d) / "throughput.zip"
            z.write_bytes(b"PK\x03\x04 not a zip")
            self.refused(z)
            b = pathlib.Path(d) / "throughput.csv"
            b.write_bytes(b"\xff\xfe\x00\xd0")
            self.refused(b)

    def test_a_fifo_is_refused_without_blocking(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = pathlib.Path(d) / "throughput.csv"
            os.mkfifo(fifo)
            self.refused(fifo)


class BenchTables(unittest.TestCase):
    def refused(self, *args):
        assert_refused(self, "bench-tables.py", "bench-tables: ", "--bin", sys.executable,
                       "--check", *args)

    def test_a_work_directory_that_is_a_file_or_has_no_parent_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            f = pathlib.Path(d) / "file"
            f.write_text("")
            self.refused("--work", str(f))
            self.refused("--work", str(pathlib.Path(d) / "missing" / "work"))
            self.assertFalse((pathlib.Path(d) / "missing").exists())

    def test_a_file_to_rewrite_that_is_not_a_regular_file_is_refused(self):
        self.refused("--file", "/nonexistent/BENCHMARKS.md")
        self.refused("--file", os.devnull)


if __name__ == "__main__":
    unittest.main()
