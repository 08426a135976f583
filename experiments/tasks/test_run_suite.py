"""Tests of run_suite.py with a stand-in for flashtrain (standard library only;
ctest runs them)."""
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "run_suite.py")
sys.path.insert(0, HERE)
import run_suite  # noqa: E402

# Writes the metrics.jsonl a task run writes. The score on 40..256 encodes the
# run: lstm 0.95 at lr 1e-2, else 0.1 x (seed + 1) (transformer: half that);
# on 257..1024 half of it. Every run fits its training lengths but the
# transformer on s5. Runs of lr 1e-2 reach a target loss (training.target_loss
# > 0) at step 30 (an early stop); the others train to the cap. Answer-last tasks get
# answers_by_length over lengths 40..256 and 257..1024. It
# exits 3 for slstm on s5, sleeps FAKE_SLEEP_SECONDS (60; SIGTERM: a checkpoint,
# exit 143) when FAKE_SLEEP names the run's folder, resumes when a checkpoint is there, and
# logs each invocation, its GPU and arguments to calls.jsonl beside itself.
FAKE_FLASHTRAIN = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
folder = args["job.dump_folder"]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.jsonl"), "a") as f:
    f.write(json.dumps({"run": os.path.basename(folder), "argv": sys.argv[1:],
                        "gpu": os.environ.get("CUDA_VISIBLE_DEVICES", "none")}) + "\n")
task, model = args["data.task"], args["model.kind"]
if model == "lstm" and args.get("model.structure") == "residual":
    model = "lstm_block"
lr, seed, steps = float(args["optimizer.lr"]), int(args["training.seed"]), int(args["training.steps"])
if task == "s5" and model == "slstm":
    sys.exit(3)
checkpoint = os.path.join(folder, "checkpoints")
metrics = open(os.path.join(folder, "metrics.jsonl"), "a")
def write(record):
    metrics.write(json.dumps(record) + "\n")
    metrics.flush()
write({"kind": "event", "event": "resume" if os.path.exists(checkpoint) else "start", "step": 0})
if os.environ.get("FAKE_SLEEP") == os.path.basename(folder):
    def stop(signum, frame):
        os.makedirs(checkpoint, exist_ok=True)
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    write({"kind": "train", "step": 10, "loss": 0.5})
    time.sleep(float(os.environ.get("FAKE_SLEEP_SECONDS", "60")))
early = lr == 1e-2 and float(args.get("training.target_loss", "0")) > 0
last = 30 if early else steps
write({"kind": "train", "step": last, "loss": 5e-5 if early else 0.2})
if early:
    write({"kind": "event", "event": "target_loss", "step": last})
score = 0.95 if (model == "lstm" and lr == 1e-2) else 0.1 * (seed + 1) * (0.5 if model == "transformer" else 1)
def band(scaled, lengths):
    scores = {"scaled_accuracy": scaled, "accuracy": (1 + scaled) / 2, "sequence_accuracy": (1 + scaled) / 2}
    if task not in ("s5", "z60"):
        scores["answers_by_length"] = [[n, 16 if n <= 100 else 8, 16] for n in lengths]
    return scores
fitted = 0.3 if (task == "s5" and model == "transformer") else 1.0
bands = {"test": band(score, range(40, 257)), "train": band(fitted, range(3, 41)),
         "long": band(score / 2, range(257, 1025))}
write({"kind": "val", "step": last, "loss": 0.1, **{k: v for k, v in bands["test"].items()}, "bands": bands})
'''


class Helpers(unittest.TestCase):
    def test_lr_labels_and_names(self):
        self.assertEqual([run_suite.lr_label(x) for x in (1e-2, 1e-3, 1e-4, 2.5e-3, 3e-1)],
                         ["1e-2", "1e-3", "1e-4", "2.5e-3", "3e-1"])
        run = {"task": "parity", "model": "lstm_block", "lr": 1e-3, "seed": 2, "steps": 5}
        self.assertEqual(run_suite.run_name(run), "parity-lstm_block-lr1e-3-seed2")

    def test_rows_get_their_own_rates_and_seeds(self):
        runs = run_suite.plan(["parity"], ["lstm", "transformer"], [1e-2, 1e-3], [0, 1], 100, {},
                              {"transformer": (3e-4,)}, {"lstm": (0, 1, 2)})
        lstm = {(r["lr"], r["seed"]) for r in runs if r["model"] == "lstm"}
        transformer = {(r["lr"], r["seed"]) for r in runs if r["model"] == "transformer"}
        self.assertEqual(lstm, {(lr, s) for lr in (1e-2, 1e-3) for s in (0, 1, 2)})
        self.assertEqual(transformer, {(lr, s) for lr in (1e-2, 1e-3, 3e-4) for s in (0, 1)})
        self.assertEqual(len(runs), 12)
        self.assertEqual(run_suite.parse_row_values("transformer=3e-4,1e-5,linear_scan=3e-4", float, "row-lrs"),
                         {"transformer": (3e-4, 1e-5), "linear_scan": (3e-4,)})
        self.assertEqual(run_suite.parse_row_values("", int, "row-seeds"), {})

    def test_defaults_give_every_row_the_papers_grid(self):
        args = run_suite.parse_args(["--out", "x", "--report-only"])
        self.assertEqual((args.steps, args.target_loss), (100000, 0))  # the whole cap, no early stop
        runs = run_suite.plan(args.tasks, args.models, args.lrs, args.seeds, args.steps, args.steps_for,
                              args.row_lrs, args.row_seeds)
        per_cell = {}
        for r in runs:
            per_cell.setdefault((r["task"], r["model"]), set()).add((r["lr"], r["seed"]))
        self.assertEqual(len(args.tasks), 12)
        for (task, model), grid in per_cell.items():
            lrs = {1e-2, 1e-3, 1e-4} | ({3e-4} if model in ("transformer", "linear_scan") else set())
            seeds = {0, 1, 2, 3, 4} if model == "lstm" else {0, 1, 2}
            self.assertEqual(grid, {(lr, s) for lr in lrs for s in seeds}, (task, model))
        self.assertEqual({r["steps"] for r in runs}, {100000})

    def test_plan_goes_seed_then_lr_then_cells(self):
        runs = run_suite.plan(["parity", "s5"], ["lstm", "gru"], [1e-2, 1e-3], [0, 1], 100, {"s5": 7})
        self.assertEqual(len(runs), 16)
        self.assertEqual([(r["task"], r["model"]) for r in runs[:4]],
                         [("parity", "lstm"), ("parity", "gru"), ("s5", "lstm"), ("s5", "gru")])
        self.assertEqual([(r["lr"], r["seed"]) for r in runs[::4]],
                         [(1e-2, 0), (1e-3, 0), (1e-2, 1), (1e-3, 1)])
        self.assertEqual({r["steps"] for r in runs if r["task"] == "s5"}, {7})
        self.assertEqual({r["steps"] for r in runs if r["task"] == "parity"}, {100})

    def test_cell_stats(self):
        self.assertEqual(run_suite.cell_stats([0.95, 0.2, 0.91, 0.5], 4),
                         {"max": 0.95, "median": (0.5 + 0.91) / 2, "solved": 2, "finished": 4})
        self.assertEqual(run_suite.cell_stats([0.3, 0.1, 0.9], 5),
                         {"max": 0.9, "median": 0.3, "solved": 1, "finished": 5})
        self.assertEqual(run_suite.cell_stats([], 2)["max"], None)

    def test_cells_score_fitted_runs_and_name_the_unfitted(self):
        cell = {"planned": 3, "finished": 3, "fitted": 2, "best_in_distribution": 1.0,
                "bands": {"test": {"max": 0.97, "median": 0.9, "solved": 2, "finished": 3}}}
        self.assertEqual(run_suite.format_cell(cell, "test"), "0.97 / 0.90 (2/3; 2 fitted)")
        self.assertEqual(run_suite.format_cell({**cell, "fitted": 3}, "test"), "0.97 / 0.90 (2/3)")
        self.assertEqual(run_suite.format_cell({**cell, "fitted": 0, "best_in_distribution": 0.41}, "test"),
                         "not fitted (0.41)")
        self.assertEqual(run_suite.format_cell({**cell, "planned": 4}, "test"), "0.97 / 0.90 (2/3; 2 fitted)*")
        self.assertEqual(run_suite.format_cell({**cell, "finished": 0}, "test"), "–")

    def test_recipe_overrides(self):
        overrides = run_suite.run_overrides({"task": "parity", "model": "lstm", "lr": 1e-3, "seed": 1,
                                             "steps": 5000}, 1e-4, 2000, ["--x.y=1"])
        for wanted in ("--model.kind=lstm", "--model.structure=plain", "--optimizer.lr=0.001",
                       "--optimizer.beta2=0.99", "--lr_scheduler.warmup_steps=500",
                       "--lr_scheduler.min_lr_ratio=0.01", "--validation.every=5000",
                       "--validation.steps=16", "--training.local_batch_size=256",
                       "--data.task_val_long_max_len=1024",
                       "--training.target_loss=0.0001", "--checkpoint.interval=2000"):
            self.assertIn(wanted, overrides)
        self.assertEqual(overrides[-1], "--x.y=1")
        self.assertFalse(any("seq_len" in o for o in overrides))
        no_target = run_suite.run_overrides({"task": "s5", "model": "slstm", "lr": 1e-4, "seed": 0,
                                             "steps": 10}, 0, 0, [])
        self.assertIn("--training.target_loss=0", no_target)  # the config's own must not apply
        self.assertIn("--model.conv_kernel=0", no_target)
        self.assertIn("--lr_scheduler.min_lr_ratio=0.1", no_target)

    def test_the_shipped_config_is_the_recipe(self):
        # configs/tasks_parity.toml and RECIPE describe one recipe: every pinned
        # override, the lstm row and a 100000-step run at lr 1e-3 equal the config.
        try:
            import tomllib
        except ImportError:
            self.skipTest("tomllib needs Python >= 3.11")
        with open(os.path.join(run_suite.REPO, "configs", "tasks_parity.toml"), "rb") as f:
            config = tomllib.load(f)
        run = {"task": "parity", "model": "lstm", "lr": 1e-3, "seed": 42, "steps": 100000}
        for override in run_suite.run_overrides(run, run_suite.TARGET_LOSS, 0, []):
            key, value = override[2:].split("=", 1)
            section, name = key.split(".")
            if key in ("validation.every", "checkpoint.interval", "checkpoint.keep_last"):
                continue  # the suite validates and saves its own way
            self.assertIn(name, config[section], override)
            expected = config[section][name]
            parsed = type(expected)(float(value) if isinstance(expected, (int, float)) else value)
            self.assertEqual(parsed, expected, override)

    def test_read_metrics_restart_and_early_stop(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "metrics.jsonl")
            lines = [{"kind": "event", "event": "start"}, {"kind": "train", "step": 10, "loss": 1.0},
                     {"kind": "val", "step": 100, "scaled_accuracy": 0.2},  # an earlier attempt
                     {"kind": "event", "event": "start"}, {"kind": "train", "step": 40, "loss": 1e-5},
                     {"kind": "event", "event": "target_loss", "step": 40},
                     {"kind": "val", "step": 40, "scaled_accuracy": 0.7}]
            with open(path, "w") as f:
                f.write("".join(json.dumps(x) + "\n" for x in lines) + '{"kind": "tr')
            m = run_suite.read_metrics(path, 100)
            self.assertEqual((m["finished"], m["steps_trained"], m["stopped_early"], m["final_train_loss"]),
                             (True, 40, True, 1e-5))
            self.assertEqual(m["final_validation"]["scaled_accuracy"], 0.7)
            with open(path, "w") as f:
                f.write(json.dumps({"kind": "val", "step": 50, "scaled_accuracy": 0.2}) + "\n")
            self.assertFalse(run_suite.read_metrics(path, 100)["finished"])
            self.assertFalse(run_suite.read_metrics(os.path.join(d, "none"), 100)["finished"])

    def test_thin_metrics(self):
        records = [{"kind": "event", "event": "start"}] + \
                  [{"kind": "train", "step": s, "loss": 1.0} for s in range(100, 1400, 100)] + \
                  [{"kind": "val", "step": 1300}]
        lines = [json.dumps(r) + "\n" for r in records] + ['{"kind": "tr']
        kept = [json.loads(line) for line in run_suite.thin_metrics(lines, every=500)]
        self.assertEqual([r.get("step") for r in kept], [None, 500, 1000, 1300, 1300])


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.dir.name, "flashtrain")
        with open(self.fake, "w") as f:
            f.write(FAKE_FLASHTRAIN)
        os.chmod(self.fake, 0o755)
        self.out = os.path.join(self.dir.name, "out")

    def tearDown(self):
        self.dir.cleanup()

    def suite(self, *extra, env=None, code=0):
        result = subprocess.run([sys.executable, SUITE, "--out", self.out, "--flashtrain", self.fake,
                                 "--tasks", "parity,s5", "--models", "lstm,slstm,transformer",
                                 "--lrs", "1e-2,1e-3", "--seeds", "0,1", "--row-seeds", "", "--steps", "50",
                                 *extra],
                                capture_output=True, text=True, cwd=self.dir.name,
                                env={**os.environ, **(env or {})})
        self.assertEqual(result.returncode, code, result.stdout + result.stderr)
        if code:
            return None, result.stderr
        with open(os.path.join(self.out, "suite.json")) as f:
            return json.load(f), result.stdout

    def calls(self):
        path = os.path.join(self.dir.name, "calls.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [json.loads(line) for line in f]

    def test_grid_scores_table_and_schema(self):
        suite, stdout = self.suite("--jobs", "3", "--gpus", "0,1", "--target-loss", "1e-4", "--",
                                   "--metrics.log_every=5")
        self.assertEqual(len(suite["runs"]), 28)  # the transformer also at 3e-4
        self.assertEqual({c["gpu"] for c in self.calls()}, {"0", "1"})
        argv = self.calls()[0]["argv"]
        self.assertIn("--training.target_loss=0.0001", argv)
        self.assertEqual(argv[-2], "--metrics.log_every=5")  # extra overrides, then the dump folder
        self.assertTrue(argv[-1].startswith("--job.dump_folder="))
        self.assertFalse(any("seq_len" in a for a in argv))

        run = next(r for r in suite["runs"] if r["run"] == "parity-lstm-lr1e-2-seed1")
        for key in ("task", "model", "lr", "seed", "steps", "status", "steps_trained", "stopped_early",
                    "scaled_accuracy", "bands", "fitted", "final_train_loss", "answers_by_length"):
            self.assertIn(key, run)
        self.assertEqual((run["steps_trained"], run["stopped_early"], run["scaled_accuracy"], run["fitted"]),
                         (30, True, 0.95, True))
        self.assertEqual(run["bands"]["long"]["scaled_accuracy"], 0.475)
        self.assertEqual(run["answers_by_length"][0], [40, 16, 16])  # both test bands, in order
        self.assertEqual(run["answers_by_length"][-1], [1024, 8, 16])
        late = next(r for r in suite["runs"] if r["run"] == "s5-transformer-lr1e-3-seed1")
        self.assertEqual((late["steps_trained"], late["stopped_early"], late["answers_by_length"], late["fitted"]),
                         (50, False, None, False))

        cell = suite["cells"]["parity"]["lstm"]  # 0.95, 0.95, 0.1, 0.2
        test = cell["bands"]["test"]
        self.assertEqual((test["max"], test["median"], test["solved"], cell["finished"], cell["planned"]),
                         (0.95, 0.575, 2, 4, 4))
        self.assertEqual(test["best"]["lr"], 1e-2)
        self.assertEqual(cell["bands"]["long"]["max"], 0.475)
        unfitted = suite["cells"]["s5"]["transformer"]
        self.assertEqual((unfitted["fitted"], unfitted["finished"], unfitted["best_in_distribution"]), (0, 6, 0.3))
        self.assertIsNone(unfitted["bands"]["test"]["max"])
        failed = suite["cells"]["s5"]["slstm"]
        self.assertEqual((failed["bands"]["test"]["max"], failed["finished"], failed["planned"]), (None, 0, 4))
        self.assertTrue(all(r["status"].startswith("failed (exit 3")
                            for r in suite["runs"] if r["task"] == "s5" and r["model"] == "slstm"))
        self.assertEqual(suite["models"]["slstm"], run_suite.MODEL_ROWS["slstm"])
        self.assertIn("--model.structure=residual", suite["models"]["slstm"])
        self.assertEqual(suite["recipe"]["extra"], ["--metrics.log_every=5"])
        self.assertIn("selection", suite)

        with open(os.path.join(self.out, "table.txt")) as f:
            table = f.read()
        self.assertIn("| task | lstm | slstm | transformer | P: sLSTM, xLSTM Fig. 4 |", table)
        self.assertIn("| parity | 0.95 / 0.57 (2/4) |", table)
        self.assertIn("| s5 | 0.95 / 0.57 (2/4) | – | not fitted (0.30) | – |", table)
        self.assertIn("lengths 257-1024", table)
        self.assertIn("| parity | 0.47 / 0.29 (0/4) |", table)  # the long band: half the scores
        self.assertIn("Published (P): xLSTM Fig. 4", table)
        self.assertIn("at most 50 steps, stopped at training loss <= 0.0001; lr 1e-2, 1e-3 "
                      "(transformer also 3e-4; linear_scan also 3e-4) x seeds 0, 1;", table)
        self.assertIn("*: fewer runs finished than planned", table)
        self.assertIn(table, stdout)

    def test_resume_skips_finished_runs_and_refuses_other_settings(self):
        _, stdout = self.suite("--tasks", "parity", "--models", "lstm", "--jobs", "2")
        self.assertEqual(len(self.calls()), 4)
        self.assertIn("Recipe: 50 steps, no early stop;", stdout)  # the default: the whole cap
        self.assertIn("--training.target_loss=0", self.calls()[0]["argv"])
        # A run killed mid-way: metrics without a final validation, a checkpoint.
        folder = os.path.join(self.out, "runs", "parity-lstm-lr1e-3-seed0")
        with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
            f.write(json.dumps({"kind": "event", "event": "start"}) + "\n")
        os.makedirs(os.path.join(folder, "checkpoints"))
        suite, stdout = self.suite("--tasks", "parity", "--models", "lstm")
        self.assertEqual([c["run"] for c in self.calls()[4:]], ["parity-lstm-lr1e-3-seed0"])
        self.assertEqual(sum(r["status"] == "cached" for r in suite["runs"]), 3)
        self.assertEqual(suite["cells"]["parity"]["lstm"]["finished"], 4)
        with open(os.path.join(folder, "metrics.jsonl")) as f:
            self.assertIn('"resume"', f.read())
        _, stderr = self.suite("--tasks", "parity", "--models", "lstm", "--steps", "60", code=1)
        self.assertIn("started with other settings", stderr)
        suite, _ = self.suite("--tasks", "parity", "--models", "lstm", "--report-only")
        self.assertEqual(len(self.calls()), 5)
        self.assertEqual(suite["cells"]["parity"]["lstm"]["finished"], 4)

    def test_deadline_stops_running_and_queued_runs(self):
        suite, stdout = self.suite("--tasks", "parity", "--models", "lstm", "--seeds", "0",
                                   "--deadline", "1.5", env={"FAKE_SLEEP": "parity-lstm-lr1e-2-seed0"})
        statuses = {r["run"]: r["status"] for r in suite["runs"]}
        self.assertEqual(statuses["parity-lstm-lr1e-2-seed0"], "stopped at the deadline")
        self.assertEqual(statuses["parity-lstm-lr1e-3-seed0"], "not run (deadline)")
        self.assertTrue(os.path.isdir(os.path.join(self.out, "runs", "parity-lstm-lr1e-2-seed0", "checkpoints")))
        self.assertIn("| parity | – |", stdout)
        suite, _ = self.suite("--tasks", "parity", "--models", "lstm", "--seeds", "0")
        self.assertEqual(suite["cells"]["parity"]["lstm"]["finished"], 2)

    def test_start_deadline_lets_running_runs_finish(self):
        suite, _ = self.suite("--tasks", "parity", "--models", "lstm", "--seeds", "0", "--deadline", "20",
                              "--start-deadline", "0.5",
                              env={"FAKE_SLEEP": "parity-lstm-lr1e-2-seed0", "FAKE_SLEEP_SECONDS": "1.5"})
        statuses = {r["run"]: r["status"] for r in suite["runs"]}
        self.assertEqual(statuses["parity-lstm-lr1e-2-seed0"], "finished")  # ran past the start deadline
        self.assertEqual(statuses["parity-lstm-lr1e-3-seed0"], "not run (deadline)")
        _, stderr = self.suite("--tasks", "parity", "--deadline", "1", "--start-deadline", "2", code=1)
        self.assertIn("--start-deadline 2 is past --deadline 1", stderr)

    def test_pack_resumes_in_a_fresh_folder(self):
        pack = os.path.join(self.dir.name, "suite.tgz")
        self.suite("--tasks", "parity", "--models", "lstm", "--seeds", "0", "--pack", pack)
        with tarfile.open(pack) as archive:
            names = set(archive.getnames())
        self.assertTrue({"suite.json", "table.txt", "runs/parity-lstm-lr1e-2-seed0/run.json",
                         "runs/parity-lstm-lr1e-2-seed0/metrics.jsonl",
                         "runs/parity-lstm-lr1e-2-seed0/log_tail.txt"} <= names, names)
        self.out = os.path.join(self.dir.name, "fresh")
        os.makedirs(self.out)
        with tarfile.open(pack) as archive:
            archive.extractall(self.out)
        suite, _ = self.suite("--tasks", "parity", "--models", "lstm", "--seeds", "0,1")
        self.assertEqual([c["run"] for c in self.calls()[2:]],
                         ["parity-lstm-lr1e-2-seed1", "parity-lstm-lr1e-3-seed1"])
        self.assertEqual(suite["cells"]["parity"]["lstm"]["finished"], 4)

    def test_bad_options_are_named(self):
        for options, message in ((["--models", "lstm,rwkv"], "unknown models ['rwkv']"),
                                 (["--steps-for", "parity=x"], "--steps-for 'parity=x'"),
                                 (["--", "--data.seq_len=41"], "no --data.seq_len")):
            _, stderr = self.suite(*options, code=1)
            self.assertIn(message, stderr)


if __name__ == "__main__":
    unittest.main()
