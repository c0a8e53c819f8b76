"""Tests of scripts/check-doc-commands.py's profile check: python3 -m unittest discover -s
scripts -p 'test_*.py' (scripts/test.sh runs them)."""

import importlib.util
import pathlib
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_doc_commands", ROOT / "scripts/check-doc-commands.py")
check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check)


class ProfileStrings(unittest.TestCase):
    def test_the_profile_is_read_from_the_source(self):
        profile = check.satellite_cc()
        self.assertTrue(profile.startswith("cubic"), profile)
        self.assertGreaterEqual(profile.count("+") + 1, check.PROFILE_MIN_PARTS)
        with tempfile.TemporaryDirectory() as d:
            source = pathlib.Path(d) / "profile.rs"
            source.write_text('pub const SATELLITE: &str = "satellite";\n')
            with self.assertRaises(ValueError):
                check.satellite_cc(source)

    def test_a_quoted_profile_must_be_the_current_one(self):
        profile = "cubic+search+growth:x=3+jump:cap,bound=2+cr:ss-cap=1,jump-on-confirm"
        old = "cubic+search+growth:x=3+floor+jump:train,cap+cr:ss-cap=1"
        doc = "\n".join([
            f"The profile (`{profile}`) is current.",
            f"An old one: `{old}`.",
            "",
            f"    satquic sim --cc {old} -n 1M",
            "Examples stay free: `cubic+search:v2,lower-cwnd`, `newreno+hystart++`, `cubic+jump+burst`.",
        ])
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "doc.md"
            path.write_text(doc)
            problems = check.check_profile(path, pathlib.Path("docs/doc.md"), profile)
        self.assertEqual([p.split(":")[1] for p in problems], ["2", "4"], problems)
        self.assertIn(old, problems[0])

    def test_only_readme_and_docs_quote_the_profile(self):
        self.assertTrue(check.quotes_the_profile(pathlib.Path("README.md")))
        self.assertTrue(check.quotes_the_profile(pathlib.Path("docs/profile.md")))
        self.assertFalse(check.quotes_the_profile(pathlib.Path("BENCHMARKS.md")))


if __name__ == "__main__":
    unittest.main()
