"""long_context_table.py on hand-made summaries: ratios to the Transformer per T,
failed runs shown as such, the JSON written."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import long_context_table  # noqa: E402


def run(config, speed, status="ok", memory=10.0, loss=4.0):
    return {"config": config, "status": status, "steps": 40, "tokens_per_second": speed, "mfu": None,
            "peak_memory_gib": memory, "final_train_loss": None, "final_val_loss": loss, "wall_seconds": 60}


class LongContextTable(unittest.TestCase):
    def test_ratios_per_length_and_failures(self):
        with tempfile.TemporaryDirectory() as base:
            for T, runs in ((1024, [run("transformer", 800e3), run("lstm_12head", 1.2e6)]),
                            (16384, [run("transformer", 400e3), run("lstm_12head", None, "failed (exit status 1)")])):
                os.makedirs(os.path.join(base, f"T{T}"))
                with open(os.path.join(base, f"T{T}", "summary.json"), "w") as f:
                    json.dump({"device": "H200", "runs": runs}, f)
            os.makedirs(os.path.join(base, "Tx"))  # not a length: ignored
            self.assertEqual(long_context_table.main([base, "--tokens", "65536"]), 0)
            with open(os.path.join(base, "long_context.json")) as f:
                result = json.load(f)
        self.assertEqual(result["lengths"], [1024, 16384])
        self.assertEqual(result["tokens_per_step"], 65536)
        by = {(r["model"], r["T"]): r for r in result["runs"]}
        self.assertAlmostEqual(by[("lstm_12head", 1024)]["vs_transformer"], 1.5)
        self.assertIsNone(by[("lstm_12head", 16384)]["vs_transformer"])
        text = long_context_table.table(result["runs"], result["lengths"])
        self.assertIn("1,200k (1.50×), 10 GiB, val 4.000", text)
        self.assertIn("failed (exit status 1)", text)


if __name__ == "__main__":
    unittest.main()
