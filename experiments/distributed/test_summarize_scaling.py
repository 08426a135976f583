"""Tests of summarize_scaling.py (standard library only; ctest runs them)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize_scaling  # noqa: E402


def write_run(runs_dir, name, tokens_per_second, losses, val=(), overlap=None):
    with open(os.path.join(runs_dir, f"{name}.metrics.jsonl"), "w") as f:
        f.write(json.dumps({"kind": "event", "event": "start"}) + "\n")
        for i, loss in enumerate(losses):
            record = {"kind": "train", "step": 10 * (i + 1), "loss": loss, "tokens_per_second": tokens_per_second[i],
                      "peak_memory_gib": 9.5}
            if overlap is not None:
                record.update(comm_seconds=0.010, comm_wait_seconds=0.001, comm_overlap=overlap)
            f.write(json.dumps(record) + "\n")
        for step, loss in val:
            f.write(json.dumps({"kind": "val", "step": step, "loss": loss}) + "\n")


class SummarizeScaling(unittest.TestCase):
    def run_summary(self, runs_dir):
        stdout = io.StringIO()
        with redirect_stdout(stdout):
            status = summarize_scaling.main([runs_dir])
        self.assertEqual(status, 0)
        with open(os.path.join(runs_dir, "summary.json")) as f:
            return json.load(f), stdout.getvalue()

    def test_efficiency_overlap_and_curves(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "device.txt"), "w") as f:
                f.write("NVIDIA H200, 580, 143771 MiB\n" * 4)
            rows = [("scale_lstm_1gpu", "lstm", "scale", 1, 40, 0), ("scale_lstm_2gpu", "lstm", "scale", 2, 40, 0),
                    ("scale_lstm_4gpu", "lstm", "scale", 4, 40, 1),
                    ("curve_lstm_1gpu", "lstm", "curve", 1, 40, 0), ("curve_lstm_4gpu", "lstm", "curve", 4, 40, 0)]
            with open(os.path.join(d, "runs.tsv"), "w") as f:
                f.write("name\tconfig\tpurpose\tgpus\tsteps\texit\tseconds\n")
                for name, config, purpose, gpus, steps, rc in rows:
                    f.write(f"{name}\t{config}\t{purpose}\t{gpus}\t{steps}\t{rc}\t12.5\n")
            # The first two progress lines are start-up and must not count.
            write_run(d, "scale_lstm_1gpu", [1, 1, 100, 100], [9, 8, 7, 6])
            write_run(d, "scale_lstm_2gpu", [1, 1, 190, 190], [9, 8, 7, 6], overlap=0.9)
            write_run(d, "scale_lstm_4gpu", [1, 1, 360, 360], [9, 8, 7], overlap=0.8)
            write_run(d, "curve_lstm_1gpu", [1, 1, 1, 1], [9.0, 8.0, 7.0, 6.0], val=[(20, 7.5), (40, 6.5)])
            write_run(d, "curve_lstm_4gpu", [1, 1, 1, 1], [9.0, 8.1, 7.0, 6.05], val=[(20, 7.5), (40, 7.2)])
            summary, text = self.run_summary(d)
        rows = {r["gpus"]: r for r in summary["scaling"]["lstm"]}
        self.assertAlmostEqual(rows[2]["efficiency"], 0.95)
        self.assertAlmostEqual(rows[4]["efficiency"], 0.90)
        self.assertAlmostEqual(rows[2]["comm_overlap"], 0.9)
        self.assertAlmostEqual(rows[2]["comm_ms"], 10.0)
        self.assertIsNone(rows[1]["comm_overlap"])
        self.assertFalse(rows[4]["complete"])  # exit 1 and 30 of 40 steps
        curves = summary["curves"]["lstm"]
        self.assertEqual(curves["gpus"], 4)
        self.assertAlmostEqual(curves["train"]["max_abs_diff"], 0.1)
        self.assertTrue(curves["train"]["match"])
        self.assertFalse(curves["val"]["match"])  # last means 7.0 vs 7.35: 5 %
        self.assertIn("incomplete runs: scale_lstm_4gpu", text)

    def test_bad_runs_file_names_the_line(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "runs.tsv"), "w") as f:
                f.write("name\tconfig\tpurpose\tgpus\tsteps\texit\tseconds\nonly\ttwo\n")
            stderr = io.StringIO()
            from contextlib import redirect_stderr
            with redirect_stderr(stderr):
                self.assertEqual(summarize_scaling.main([d]), 2)
            self.assertIn("runs.tsv:2: 2 fields, expected 7", stderr.getvalue())


if __name__ == "__main__":
    unittest.main()
