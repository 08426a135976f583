"""flashtrain.Tokenizer against the trainer's own encoding: a tokenizer trained
by `flashtrain prepare`, and the shards it wrote, where each document is
[bos] + encode(text) + [eos]. Needs the build's flashtrain (FLASHTRAIN_BUILD_DIR,
as ctest sets it) and an extension built with SentencePiece."""
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import numpy
import torch

import flashtrain

BUILD_DIR = os.environ.get("FLASHTRAIN_BUILD_DIR")
BINARY = Path(BUILD_DIR) / "trainer" / "flashtrain" if BUILD_DIR else None
DOCUMENTS = {
    "a.txt": "The quick brown fox jumps over the lazy dog.\nIt ran away.\n\nA second paragraph, with 42 digits.",
    "b.txt": "Lines of text, line after line.\nSome words repeat: line, line, text.",
}


def read_shard(path):
    """The tokens of a shard in llm.c's layout (uint16 or uint32 by magic)."""
    header = numpy.fromfile(path, dtype="<i4", count=256)
    dtype = "<u2" if header[0] == 20240520 else "<u4"
    return numpy.fromfile(path, dtype=dtype, offset=1024, count=int(header[2])).tolist()


@unittest.skipUnless(BINARY and BINARY.exists(), "needs the build's flashtrain (FLASHTRAIN_BUILD_DIR)")
@unittest.skipUnless(hasattr(torch.ops.flashtrain, "tokenize"), "the extension was built without SentencePiece")
class TokenizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        docs = Path(cls.dir.name) / "docs"
        docs.mkdir()
        for name, text in DOCUMENTS.items():
            (docs / name).write_text(text * 20)
        cls.out = Path(cls.dir.name) / "out"
        done = subprocess.run([str(BINARY), "prepare", "--output", str(cls.out), "--train-tokenizer",
                               "--vocab-size", "300", "--val-fraction", "0", "--quiet", str(docs)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        cls.tokenizer = flashtrain.Tokenizer(cls.out / "tokenizer.model")

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_encodes_documents_as_the_shards_hold_them(self):
        tokens = read_shard(self.out / "train_000000.bin")
        t = self.tokenizer
        expected = []
        for name in sorted(DOCUMENTS):  # documents go in name order
            expected += [t.bos_id] + t.encode(DOCUMENTS[name] * 20) + [t.eos_id]
        self.assertEqual(tokens, expected)

    def test_round_trip_and_special_ids(self):
        t = self.tokenizer
        text = "two lines\nof text\n"
        ids = t.encode(text)
        self.assertIn(t.newline_id, ids)
        self.assertEqual(t.decode(ids), text)
        self.assertEqual(t.decode(torch.tensor(ids)), text)
        self.assertEqual(t.encode(text, bos=True), [t.bos_id] + ids)
        self.assertEqual(t.vocab_size, 300)

    def test_errors_are_named(self):
        with self.assertRaises(FileNotFoundError):
            flashtrain.Tokenizer(Path(self.dir.name) / "missing.model")
        with self.assertRaises(ValueError) as e:
            self.tokenizer.decode([5, 300])
        self.assertIn("id 300 is outside the vocabulary", str(e.exception))
        with self.assertRaises(TypeError):
            self.tokenizer.encode(b"bytes")
        with self.assertRaises(ValueError):
            self.tokenizer.decode(torch.zeros(2, 3, dtype=torch.long))


if __name__ == "__main__":
    unittest.main()
