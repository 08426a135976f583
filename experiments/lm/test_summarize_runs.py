"""Tests of summarize_runs.py (standard library only; ctest runs them)."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summarize_runs  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


class SummarizeRuns(unittest.TestCase):
    def test_summary_and_table(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "device.txt"), "NVIDIA H100 80GB HBM3, 580.1, 81559 MiB\n")
            lines = [
                {"kind": "event", "event": "start"},
                {"kind": "train", "step": 1, "loss": 10.9, "tokens_per_second": 1000.0, "mfu": 0.01,
                 "peak_memory_gib": 9.5},
                {"kind": "train", "step": 10, "loss": 8.0, "tokens_per_second": 50000.0, "mfu": 0.20,
                 "peak_memory_gib": 12.25},
                {"kind": "train", "step": 20, "loss": 7.0, "tokens_per_second": 70000.0, "mfu": 0.30,
                 "peak_memory_gib": 12.0},
                {"kind": "train", "step": 30, "loss": 6.5, "tokens_per_second": 60000.0, "mfu": 0.25,
                 "peak_memory_gib": 11.0},
                {"kind": "val", "step": 30, "loss": 6.75, "perplexity": 854.0},
            ]
            write(os.path.join(out, "lstm_12head.metrics.jsonl"), "\n".join(json.dumps(l) for l in lines) + "\n")
            write(os.path.join(out, "lstm_12head.log"), "== lstm_12head: flashtrain ...\nlstm_12head: 95 s\n")
            write(os.path.join(out, "transformer.log"), "transformer: exit status 1\ntransformer: 3 s\n")
            stdout = io.StringIO()
            with redirect_stdout(stdout):
                status = summarize_runs.main([out, "lstm_12head", "transformer", "--corpus", ".data/corpus-small"])
            self.assertEqual(status, 0)
            with open(os.path.join(out, "summary.json")) as f:
                summary = json.load(f)
            self.assertEqual(summary["corpus"], ".data/corpus-small")
            self.assertTrue(summary["device"].startswith("NVIDIA H100"))
            lstm, transformer = summary["runs"]
            self.assertEqual(lstm["status"], "ok")
            self.assertEqual(lstm["steps"], 30)
            self.assertEqual(lstm["tokens_per_second"], 60000.0)  # median without step 1
            self.assertAlmostEqual(lstm["mfu"], 0.25)
            self.assertEqual(lstm["peak_memory_gib"], 12.25)
            self.assertEqual(lstm["final_train_loss"], 6.5)
            self.assertEqual(lstm["final_val_loss"], 6.75)
            self.assertEqual(lstm["wall_seconds"], 95)
            self.assertEqual(transformer["status"], "failed (exit status 1)")
            self.assertIsNone(transformer["tokens_per_second"])
            table = stdout.getvalue().splitlines()
            self.assertIn("tok/s", table[1])
            self.assertRegex(table[3], r"^lstm_12head +ok +30 +60,000 +25\.0% +12\.25 +6\.5000 +6\.7500 +95$")
            self.assertRegex(table[4], r"^transformer +FAILED")

    def test_malformed_metrics_are_an_error_naming_the_line(self):
        with tempfile.TemporaryDirectory() as out:
            write(os.path.join(out, "x.metrics.jsonl"), '{"kind": "train"}\nnot json\n')
            stderr = io.StringIO()
            sys.stderr, saved = stderr, sys.stderr
            try:
                status = summarize_runs.main([out, "x"])
            finally:
                sys.stderr = saved
            self.assertEqual(status, 2)
            self.assertIn("x.metrics.jsonl:2: not JSON", stderr.getvalue())


if __name__ == "__main__":
    unittest.main()
