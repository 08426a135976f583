"""Tests of ab.py with a stand-in flashbench (standard library only; ctest runs them)."""
import io
import json
import os
import sys
import tempfile
import unittest
import unittest.mock
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab  # noqa: E402

# A stand-in flashbench: writes one record per pass for the shape it is given;
# its time is the scale argument times the pass's base time, plus the round
# number it counts in a file (so the medians over rounds are checkable).
FAKE = r'''
import json, os, sys
scale, counter = float(sys.argv[1]), sys.argv[2]
args = sys.argv[3:]
out = args[args.index("--out") + 1]
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
extra = ["lstm"] if "--only-lstm" in args else ["lstm", "slstm"]
records = [{"cell": c, "backend": "fused", "B": 16, "T": 1024, "N": 12, "D": 64, "pass": p,
            "median_ms": scale * base + n, "rel_error": 1e-3 * scale}
           for c in extra for p, base in (("fw", 1.0), ("fwbw", 4.0))]
json.dump({"records": records}, open(out, "w"))
'''


class AbTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.dir.name, "fake_flashbench.py")
        with open(self.fake, "w") as f:
            f.write(FAKE)

    def tearDown(self):
        self.dir.cleanup()

    def command(self, scale, name, extra=""):
        counter = os.path.join(self.dir.name, name + ".count")
        return f"{sys.executable} {self.fake} {scale} {counter} {extra}".strip()

    def run_ab(self, argv):
        stdout = io.StringIO()
        with redirect_stdout(stdout):
            status = ab.main(argv)
        return status, stdout.getvalue()

    def test_medians_ratios_and_interleaving(self):
        out = os.path.join(self.dir.name, "ab.json")
        status, text = self.run_ab(["--a", self.command(1.0, "a"), "--b", self.command(0.5, "b"),
                                    "--rounds", "3", "--out", out, "--", "--shape", "16,1024,12,64"])
        self.assertEqual(status, 0)
        result = json.load(open(out))
        self.assertEqual(result["flashbench_args"], ["--shape", "16,1024,12,64"])
        cases = {(c["cell"], c["pass"]): c for c in result["cases"]}
        self.assertEqual(len(cases), 4)
        fw = cases[("lstm", "fw")]
        # Each side ran 3 times (rounds 0, 1, 2 add 0, 1, 2 ms): medians 1 + 1 and 0.5 + 1.
        self.assertEqual(fw["a_runs"], [1.0, 2.0, 3.0])
        self.assertEqual(fw["b_runs"], [0.5, 1.5, 2.5])
        self.assertAlmostEqual(fw["a_ms"], 2.0)
        self.assertAlmostEqual(fw["b_ms"], 1.5)
        self.assertAlmostEqual(fw["ratio_b_over_a"], 0.75)
        self.assertAlmostEqual(fw["b_max_rel_error"], 5e-4)
        self.assertIn("B/A", text)
        self.assertIn("0.750", text)

    def test_a_case_missing_on_one_side_is_kept(self):
        out = os.path.join(self.dir.name, "ab.json")
        status, _ = self.run_ab(["--a", self.command(1.0, "a", "--only-lstm"), "--b", self.command(1.0, "b"),
                                 "--rounds", "1", "--out", out])
        self.assertEqual(status, 0)
        slstm = [c for c in json.load(open(out))["cases"] if c["cell"] == "slstm"]
        self.assertEqual(len(slstm), 2)
        self.assertIsNone(slstm[0]["a_ms"])
        self.assertIsNone(slstm[0]["ratio_b_over_a"])

    def test_a_failing_flashbench_is_named(self):
        with self.assertRaises(SystemExit) as caught:
            self.run_ab(["--a", f"{sys.executable} -c 'import sys; sys.exit(3)'", "--b", self.command(1.0, "b"),
                         "--out", os.path.join(self.dir.name, "ab.json")])
        self.assertIn("exited 3", str(caught.exception))

    def test_out_after_the_separator_is_refused(self):
        with self.assertRaises(SystemExit):
            with redirect_stdout(io.StringIO()), unittest.mock.patch("sys.stderr", io.StringIO()):
                ab.main(["--a", "x", "--b", "y", "--", "--out", "z.json"])

    def test_runs_from_earlier_calls_are_combined_without_running(self):
        # Two files per side (e.g. two shapes or two rounds from separate device calls).
        def write(name, ms):
            path = os.path.join(self.dir.name, name)
            records = [{"cell": "lstm", "backend": "fused", "B": 16, "T": 1024, "N": 1, "D": 768, "pass": "fw",
                        "median_ms": ms, "rel_error": 1e-3}]
            json.dump({"records": records}, open(path, "w"))
            return path
        out = os.path.join(self.dir.name, "ab.json")
        status, text = self.run_ab(["--a", "v16", "--b", "v17", "--out", out,
                                    "--a-runs", write("a1.json", 3.6), write("a2.json", 3.7),
                                    "--b-runs", write("b1.json", 3.0), write("b2.json", 2.9)])
        self.assertEqual(status, 0)
        (case,) = json.load(open(out))["cases"]
        self.assertEqual(case["a_runs"], [3.6, 3.7])
        self.assertAlmostEqual(case["ratio_b_over_a"], 2.95 / 3.65)
        self.assertIn("A = v16", text)

    def test_runs_of_one_side_only_are_refused(self):
        with self.assertRaises(SystemExit):
            with redirect_stdout(io.StringIO()), unittest.mock.patch("sys.stderr", io.StringIO()):
                ab.main(["--a", "x", "--b", "y", "--a-runs", "a.json"])

    def test_a_file_that_is_not_flashbench_json_is_named(self):
        bad = os.path.join(self.dir.name, "bad.json")
        open(bad, "w").write("{}")
        with self.assertRaises(SystemExit) as caught:
            self.run_ab(["--a", "x", "--b", "y", "--a-runs", bad, "--b-runs", bad])
        self.assertIn("bad.json", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
