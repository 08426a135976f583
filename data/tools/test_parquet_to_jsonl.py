"""parquet_to_jsonl.py: rows in, JSON lines out, the text exact; bad columns named."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import parquet_to_jsonl  # noqa: E402


class ParquetToJsonl(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, table, **options):
        path = os.path.join(self.dir.name, name)
        pq.write_table(table, path, **options)
        return path

    def test_every_non_empty_text_in_order_across_row_groups(self):
        texts = [f"document {i}: ünïcödé, a \"quote\"\nand a second line" for i in range(10)]
        column = texts[:3] + [None] + texts[3:6] + [""] + texts[6:]
        path = self.write("corpus.parquet", pa.table({"id": list(range(12)), "text": column}), row_group_size=4)
        out = os.path.join(self.dir.name, "out")
        os.makedirs(out)
        target, written, skipped = parquet_to_jsonl.convert(path, out, "text", batch_rows=3)
        self.assertEqual(os.path.basename(target), "corpus.jsonl.gz")
        self.assertEqual((written, skipped), (10, 2))
        with gzip.open(target, "rt", encoding="utf-8") as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[-1], "")  # every object ends its line
        self.assertEqual([json.loads(line)["text"] for line in lines[:-1]], texts)
        self.assertFalse(os.path.exists(target + ".partial"))

    def test_command_line_and_bad_columns(self):
        path = self.write("books.parquet", pa.table({"body": ["a", "b"], "n": [1, 2]}))
        out = os.path.join(self.dir.name, "out")
        script = os.path.join(HERE, "parquet_to_jsonl.py")
        run = subprocess.run([sys.executable, script, path, "--output", out], capture_output=True, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("no column 'text'", run.stderr)
        self.assertIn("body, n", run.stderr)
        run = subprocess.run([sys.executable, script, path, "--output", out, "--text-field", "n"],
                             capture_output=True, text=True)
        self.assertIn("column 'n' holds int64, not text", run.stderr)
        run = subprocess.run([sys.executable, script, path, "--output", out, "--text-field", "body"],
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertIn("books.jsonl.gz: 2 documents", run.stdout)


if __name__ == "__main__":
    unittest.main()
