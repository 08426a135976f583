"""Tests of plot_suite.py: the bucketing and best-run choice always, the figures
where matplotlib is installed (skipped otherwise)."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import plot_suite  # noqa: E402
import run_suite  # noqa: E402

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def record(task, model, lr, seed, score, by_length=None, fitted=True):
    """A finished run's suite.json record: `score` on both test bands."""
    run = {"task": task, "model": model, "lr": lr, "seed": seed, "steps": 100}
    band = {"scaled_accuracy": score, "accuracy": (1 + score) / 2, "sequence_accuracy": (1 + score) / 2}
    train = {**band, "scaled_accuracy": 1.0 if fitted else 0.5}
    return {"run": run_suite.run_name(run), **run, "status": "finished", "finished": True,
            "steps_trained": 100, "stopped_early": False, "final_train_loss": 0.01,
            "fitted": fitted, "bands": {"train": train, "test": band, "long": band},
            "scaled_accuracy": score, "answers_by_length": by_length}


def small_suite():
    """Two tasks x two models; lstm flat on parity, the transformer falling off."""
    flat = [[n, 10, 10] for n in range(40, 1025)]
    falling = [[n, 10 if n < 60 else 5, 10] for n in range(40, 1025)]
    runs = [record("parity", "lstm", 1e-2, 0, 1.0, flat), record("parity", "lstm", 1e-3, 0, 0.1, falling),
            record("parity", "transformer", 1e-3, 0, 0.05, falling),
            record("s5", "lstm", 1e-3, 0, 0.4), record("s5", "transformer", 1e-2, 0, 0.0, fitted=False)]
    runs.append({**record("s5", "transformer", 1e-3, 0, 0.0), "finished": False, "bands": {}})
    return {"recipe": {"steps": 100, "lrs": [1e-2, 1e-3], "seeds": [0], "train_lengths": [3, 40],
                       "test_lengths": [40, 256], "bands": run_suite.BANDS},
            "models": {"lstm": [], "transformer": []},
            "cells": run_suite.summarize_cells(runs, ["parity", "s5"], ["lstm", "transformer"]),
            "runs": runs}


class Bucketing(unittest.TestCase):
    def test_equal_ranges_summed(self):
        triples = [[n, n % 2, 1] for n in range(40, 64)]  # 24 lengths, 12 buckets of 2
        points = plot_suite.bucket(triples, buckets=12)
        self.assertEqual(len(points), 12)
        self.assertEqual(points[0], {"lo": 40, "hi": 41, "correct": 1, "total": 2, "accuracy": 0.5})
        self.assertEqual(points[-1]["hi"], 63)
        self.assertEqual(sum(p["total"] for p in points), 24)
        self.assertEqual(plot_suite.bucket([]), [])
        self.assertEqual(plot_suite.bucket([[50, 3, 4]]), [{"lo": 50, "hi": 50, "correct": 3, "total": 4,
                                                            "accuracy": 0.75}])

    def test_best_run(self):
        suite = small_suite()
        self.assertEqual(plot_suite.best_run(suite, "parity", "lstm")["lr"], 1e-2)
        self.assertIsNone(plot_suite.best_run(suite, "s5", "transformer"))  # fitted none
        self.assertEqual(suite["cells"]["s5"]["transformer"]["finished"], 1)
        self.assertEqual(suite["cells"]["s5"]["transformer"]["fitted"], 0)


@unittest.skipUnless(HAVE_MATPLOTLIB, "needs matplotlib")
class Figures(unittest.TestCase):
    def test_draws_both_figures(self):
        with tempfile.TemporaryDirectory() as d:
            written = plot_suite.draw(small_suite(), d, ["parity", "s5"])
            self.assertEqual([os.path.basename(p) for p in written], ["heat_map.png", "accuracy_by_length.png"])
            for path in written:
                self.assertGreater(os.path.getsize(path), 1000)
            # s5 has no answers by length: the heat map only.
            self.assertEqual(len(plot_suite.draw(small_suite(), d, ["s5"])), 1)


if __name__ == "__main__":
    unittest.main()
