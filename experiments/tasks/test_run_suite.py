"""Tests of run_suite.py with a stand-in for flashtrain (standard library only;
ctest runs them)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "run_suite.py")

# Writes a validation record whose score encodes the run (seed / 10), fails
# for model "slstm" on task "s5", and records which GPU it was given.
FAKE_FLASHTRAIN = r'''#!/usr/bin/env python3
import json, os, sys
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
if args["data.task"] == "s5" and args["model.kind"] == "slstm":
    sys.exit(3)
folder = args["job.dump_folder"]
os.makedirs(folder, exist_ok=True)
with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
    f.write(json.dumps({"kind": "val", "step": int(args["training.steps"]),
                        "scaled_accuracy": int(args["training.seed"]) / 10}) + "\n")
with open(os.path.join(folder, "gpu.txt"), "w") as f:
    f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "none"))
'''


class RunSuite(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.dir.name, "flashtrain")
        with open(self.fake, "w") as f:
            f.write(FAKE_FLASHTRAIN)
        os.chmod(self.fake, 0o755)
        self.out = os.path.join(self.dir.name, "out")

    def tearDown(self):
        self.dir.cleanup()

    def suite(self, *extra):
        result = subprocess.run([sys.executable, SUITE, "--out", self.out, "--flashtrain", self.fake,
                                 "--tasks", "parity,s5", "--models", "lstm,slstm", "--seeds", "1,3",
                                 "--steps", "50", *extra], capture_output=True, text=True, cwd=HERE)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(os.path.join(self.out, "suite.json")) as f:
            return json.load(f), result.stdout

    def test_parallel_runs_scores_failures_and_gpus(self):
        suite, _ = self.suite("--jobs", "3", "--gpus", "0,1")
        parity = suite["results"]["parity"]["lstm"]
        self.assertEqual(sorted(parity["scores"]), [0.1, 0.3])
        self.assertAlmostEqual(parity["mean"], 0.2)
        self.assertAlmostEqual(parity["spread"], 0.1)
        failed = suite["results"]["s5"]["slstm"]
        self.assertEqual((failed["mean"], failed["failed_runs"], failed["not_run"]), (None, 2, 0))
        gpus = set()
        for name in os.listdir(os.path.join(self.out, "runs")):
            path = os.path.join(self.out, "runs", name, "gpu.txt")
            if os.path.exists(path):
                gpus.add(open(path).read())
        self.assertEqual(gpus, {"0", "1"})

    def test_deadline_and_resume_from_records(self):
        records = os.path.join(self.dir.name, "validation_records.jsonl")
        with open(records, "w") as f:
            f.write(json.dumps({"run": "parity-lstm-seed1", "final_train_loss": 0.0,
                                "validation": [{"kind": "val", "step": 50, "scaled_accuracy": 0.9}]}) + "\n")
        suite, stdout = self.suite("--deadline", "1e-9", "--resume-from", records)
        self.assertIn("1 finished runs", stdout)
        self.assertEqual(suite["results"]["parity"]["lstm"]["scores"], [0.9])
        self.assertEqual(suite["results"]["parity"]["lstm"]["not_run"], 1)
        self.assertEqual(suite["results"]["s5"]["lstm"]["not_run"], 2)
        self.assertIn("not run", stdout)


if __name__ == "__main__":
    unittest.main()
