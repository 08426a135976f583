"""flashtrain.load_export against real exports: tiny models trained a few steps on the CPU by
the flashtrain binary of the build (FLASHTRAIN_BUILD_DIR/trainer/flashtrain) and exported
with `flashtrain export`; their logits against the independent numpy reference
experiments/lm/reference_lm.py (float64), step-by-step generation against the full
forward, and malformed exports. Skips without the binary."""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import torch

import flashtrain

SOURCE_DIR = Path(os.environ.get("FLASHTRAIN_SOURCE_DIR",
                                 Path(__file__).resolve().parents[2]))
BUILD_DIR = os.environ.get("FLASHTRAIN_BUILD_DIR")
BINARY = Path(BUILD_DIR) / "trainer" / "flashtrain" if BUILD_DIR else None

# A tiny parity run (configs/tasks_parity.toml, in two plain LSTM layers) on the CPU, in fp32,
# with a vocabulary of 11 (the task uses 3 ids; the rest are untrained rows) so that the
# logits have some width. lr 1e-2: a few steps move the weights away from their init.
BASE_FLAGS = [
    "--model.dim=16", "--model.n_layers=2", "--model.vocab_size=11", "--training.steps=3",
    "--training.mixed_precision=fp32", "--training.device=cpu", "--training.local_batch_size=4",
    "--validation.every=0", "--lr_scheduler.warmup_steps=1", "--optimizer.lr=1e-2",
    "--metrics.log_every=1", "--checkpoint.interval=0", "--model.backend=vanilla",
]
RESIDUAL = ["--model.structure=residual", "--model.n_heads=2", "--model.head_dim=8"]
CASES = {
    "plain_lstm": ["--training.steps=10"],  # the config's model; plain logits move slowly
    "residual_lstm_ffn": RESIDUAL + ["--model.tie_embeddings=true"],
    "slstm_conv": RESIDUAL + ["--model.kind=slstm"],
    "gru_elman": RESIDUAL + ["--model.kind=gru,elman"],
    "plain_gru_elman": ["--model.structure=plain", "--model.n_heads=2", "--model.head_dim=8",
                        "--model.kind=gru,elman", "--training.steps=10"],
    "scan_transformer_no_ffn": RESIDUAL + ["--model.kind=linear_scan,transformer",
                                           "--model.ffn_factor=0", "--model.tie_embeddings=true"],
    "mix_slstm_no_conv": RESIDUAL + ["--model.kind=lstm,slstm,linear_scan,transformer",
                                     "--model.n_layers=4", "--model.conv_kernel=0"],
}
FLOAT64_TOLERANCE = 1e-9   # relative to the largest logit (seen: about 1e-15)
FLOAT32_TOLERANCE = 1e-5   # the export's float32 weights in float32 (seen: about 1e-7)

_tmp = None
EXPORTS = {}
reference_lm = None


def setUpModule():
    global _tmp, reference_lm
    if BINARY is None or not BINARY.is_file():
        raise unittest.SkipTest(f"no flashtrain binary ({BINARY or 'FLASHTRAIN_BUILD_DIR unset'});"
                                " build the trainer to test load_export on real exports")
    try:
        import numpy  # noqa: F401
        import safetensors  # noqa: F401
    except ImportError as error:
        raise unittest.SkipTest(f"the reference needs numpy and safetensors: {error}")
    sys.path.insert(0, str(SOURCE_DIR / "experiments" / "lm"))
    import reference_lm as module
    reference_lm = module
    _tmp = tempfile.mkdtemp(prefix="flashtrain_test_checkpoint_")
    config = str(SOURCE_DIR / "configs" / "tasks_parity.toml")

    def train_and_export(name):
        run = os.path.join(_tmp, name)
        common = ["--config", config] + BASE_FLAGS + CASES[name] + [f"--job.dump_folder={run}"]
        export = os.path.join(_tmp, name + "_export")
        for command in (["tasks"] + common, ["export"] + common + ["--output", export]):
            done = subprocess.run([str(BINARY)] + command, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"flashtrain {' '.join(command)} failed "
                                   f"({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return name, export

    # two runs at a time: most of each is the binary's start-up
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        EXPORTS.update(pool.map(train_and_export, CASES))


def tearDownModule():
    if _tmp is not None:
        shutil.rmtree(_tmp, ignore_errors=True)


def fixed_tokens(vocab, batch=2, steps=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, steps), generator=g)


def reference_logits(directory, tokens):
    return torch.from_numpy(reference_lm.load_export(directory).logits(tokens.numpy()))


def fnv1a64(data: bytes) -> str:
    """FNV-1a, 64 bit, as 16 hex digits: written out here from its definition, independent
    of the extension's (the trainer's) code."""
    value = 0xcbf29ce484222325
    for byte in data:
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{value:016x}"


def reseal(directory):
    """Records the files' current sizes and checksums in manifest.json, as if the trainer
    had written them: an edited export that its manifest still vouches for."""
    path = os.path.join(directory, "manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    for name in manifest["files"]:
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        manifest["files"][name] = {"bytes": len(data), "fnv1a64": fnv1a64(data)}
    with open(path, "w") as f:
        json.dump(manifest, f)


def copy_export(source, target, edit_config=None, edit_tensors=None):
    """A copy of an export, config.json and/or the tensors edited, and manifest.json
    recording the edited files (so that the checks after the manifest's are reached)."""
    from safetensors.torch import load_file, save_file
    shutil.copytree(source, target)
    if edit_config is not None:
        path = os.path.join(target, "config.json")
        with open(path) as f:
            config = json.load(f)
        edit_config(config)
        with open(path, "w") as f:
            json.dump(config, f)
    if edit_tensors is not None:
        path = os.path.join(target, "model.safetensors")
        tensors = load_file(path)
        edit_tensors(tensors)
        save_file(tensors, path)
    reseal(target)
    return target


class ReferenceLogitsTest(unittest.TestCase):
    def check_against_reference(self, directory, label):
        model = flashtrain.load_export(directory, dtype=torch.float64)
        tokens = fixed_tokens(model.vocab_size)
        reference = reference_logits(directory, tokens)
        with torch.no_grad():
            ours = model(tokens)
            ours32 = flashtrain.load_export(directory)(tokens)
        self.assertEqual(ours.dtype, torch.float64)
        self.assertEqual(ours32.dtype, torch.float32)
        self.assertEqual(ours.shape, reference.shape, label)
        # Logits that vary with the input: equal near-constants would prove little.
        self.assertGreater(reference.flatten(0, 1).std(dim=0).max().item(), 0.05, label)
        scale = max(1.0, reference.abs().max().item())
        diff = (ours - reference).abs().max().item()
        diff32 = (ours32.double() - reference).abs().max().item()
        self.assertLess(diff, FLOAT64_TOLERANCE * scale, f"{label}: float64")
        self.assertLess(diff32, FLOAT32_TOLERANCE * scale, f"{label}: float32")

    def test_every_model_matches_the_reference(self):
        for name, directory in EXPORTS.items():
            with self.subTest(name):
                self.check_against_reference(directory, name)

    def test_block_diagonal_input_projection(self):
        # The trainer's config does not expose block_diagonal_input: give a dense export
        # block-diagonal wx weights [N, G*D, d/N] (random) and compare again.
        def block_diagonal(tensors):
            g = torch.Generator().manual_seed(1)
            for name in [n for n in tensors if n.endswith("mixer.wx.weight")]:
                rows, dim = tensors[name].shape
                tensors[name] = torch.randn(2, rows // 2, dim // 2, generator=g) * 0.5
        with tempfile.TemporaryDirectory() as tmp:
            for source in ("residual_lstm_ffn", "gru_elman"):
                directory = copy_export(EXPORTS[source], os.path.join(tmp, source),
                                        edit_tensors=block_diagonal)
                self.check_against_reference(directory, source + " block-diagonal")
                model = flashtrain.load_export(directory, dtype=torch.float64)
                self.assertEqual(model.blocks[0].mixer.wx.weight.dim(), 3)
                StepByStepTest.check_steps(self, model, source + " block-diagonal")

    def test_state_dict_is_the_export(self):
        from safetensors.torch import load_file
        directory = EXPORTS["mix_slstm_no_conv"]
        model = flashtrain.load_export(directory)
        tensors = load_file(os.path.join(directory, "model.safetensors"))
        state = model.state_dict()
        self.assertEqual(sorted(state), sorted(tensors))
        for name, tensor in tensors.items():
            self.assertTrue(torch.equal(state[name], tensor), name)
        self.assertFalse(model.training)

    def test_language_model_builds_the_trainers_model(self):
        # flashtrain.nn.LanguageModel from each export's [model] section: the same parameters
        # (names, shapes) as the export, and with its weights the same logits.
        for name, directory in EXPORTS.items():
            with self.subTest(name):
                exported = flashtrain.load_export(directory, dtype=torch.float64)
                with open(os.path.join(directory, "config.json")) as f:
                    section = json.load(f)["training_config"]["model"]
                built = flashtrain.nn.LanguageModel.from_config(section, exported.vocab_size).double()
                shapes = {k: tuple(v.shape) for k, v in built.state_dict().items()}
                self.assertEqual(shapes, {k: tuple(v.shape) for k, v in exported.state_dict().items()})
                built.load_state_dict(exported.state_dict())
                tokens = fixed_tokens(exported.vocab_size)
                with torch.no_grad():
                    torch.testing.assert_close(built(tokens), exported(tokens), rtol=0, atol=0)

    def test_gradients_reach_every_parameter(self):
        model = flashtrain.load_export(EXPORTS["mix_slstm_no_conv"],
                                       dtype=torch.float64)
        tokens = fixed_tokens(model.vocab_size)
        torch.nn.functional.cross_entropy(model(tokens[:, :-1]).flatten(0, 1),
                                          tokens[:, 1:].flatten()).backward()
        for name, p in model.named_parameters():
            self.assertIsNotNone(p.grad, name)
            self.assertTrue(torch.isfinite(p.grad).all(), name)


class StepByStepTest(unittest.TestCase):
    @staticmethod
    def check_steps(test, model, label):
        """One token at a time, and in chunks, from the state: the full forward's logits."""
        tokens = fixed_tokens(model.vocab_size, steps=10, seed=3)
        with torch.no_grad():
            full = model(tokens)
            logits, state = model.forward_with_state(tokens[:, :4])  # a prompt, then steps
            pieces = [logits]
            for t in range(4, tokens.shape[1]):
                logits, state = model.forward_with_state(tokens[:, t:t + 1], state)
                pieces.append(logits)
            stepped = torch.cat(pieces, dim=1)
            state = None
            chunks = []
            for start in range(0, tokens.shape[1], 3):
                logits, state = model.forward_with_state(tokens[:, start:start + 3], state)
                chunks.append(logits)
            chunked = torch.cat(chunks, dim=1)
        test.assertEqual(state.position, tokens.shape[1])
        test.assertLess((stepped - full).abs().max().item(), 1e-9, f"{label}: steps")
        test.assertLess((chunked - full).abs().max().item(), 1e-9, f"{label}: chunks")

    def test_steps_equal_the_full_forward(self):
        for name, directory in EXPORTS.items():
            with self.subTest(name):
                self.check_steps(self, flashtrain.load_export(directory, dtype=torch.float64),
                                 name)

    def test_greedy_generate_continues_with_the_forwards_argmax(self):
        for name, directory in EXPORTS.items():
            with self.subTest(name):
                model = flashtrain.load_export(directory, dtype=torch.float64)
                prompt = fixed_tokens(model.vocab_size, steps=4, seed=5)
                tokens, scores = model.generate(prompt, 7, return_logits=True)
                self.assertEqual(tokens.shape, (2, 11))
                self.assertTrue(torch.equal(tokens[:, :4], prompt))
                with torch.no_grad():
                    full = model(tokens)
                self.assertLess((scores - full[:, 3:-1]).abs().max().item(), 1e-9)
                self.assertTrue(torch.equal(tokens[:, 4:], full[:, 3:-1].argmax(-1)))

    def test_state_size_is_constant_except_the_kv_cache(self):
        def sizes(state):
            return [{k: tuple(v.shape) for k, v in block.items()} for block in state.blocks]
        for name in ("residual_lstm_ffn", "slstm_conv", "plain_gru_elman",
                     "scan_transformer_no_ffn", "mix_slstm_no_conv"):
            with self.subTest(name):
                model = flashtrain.load_export(EXPORTS[name])
                tokens = fixed_tokens(model.vocab_size, steps=8)
                with torch.no_grad():
                    _, short = model.forward_with_state(tokens[:, :3])
                    _, longer = model.forward_with_state(tokens[:, 3:], short)
                for kind, a, b in zip(model.kinds, sizes(short), sizes(longer)):
                    if kind == "transformer":
                        self.assertEqual(a["keys"][2], 3)
                        self.assertEqual(b["keys"][2], 8)
                    else:
                        self.assertEqual(a, b, kind)
                kinds = {"linear_scan": {"x"}, "transformer": {"keys", "values"}}
                for kind, module, block in zip(model.kinds, model.blocks, longer.blocks):
                    expected = kinds.get(kind, {"states"})
                    if kind == "slstm" and module.mixer.conv is not None:
                        expected = {"states", "conv_window"}
                    self.assertEqual(set(block), expected, kind)

    def test_sampling_is_seeded(self):
        model = flashtrain.load_export(EXPORTS["mix_slstm_no_conv"])
        prompt = [1, 2, 1]
        a = model.generate(prompt, 12, temperature=1.5, seed=7)
        b = model.generate(prompt, 12, temperature=1.5, seed=7)
        self.assertEqual(a.shape, (15,))  # a 1-D prompt gives one row
        self.assertTrue(torch.equal(a, b))
        self.assertTrue(((a >= 0) & (a < model.vocab_size)).all())
        self.assertTrue(torch.equal(a[:3], torch.tensor(prompt)))
        others = [model.generate(prompt, 12, temperature=1.5, seed=s) for s in range(8, 12)]
        self.assertTrue(any(not torch.equal(a, o) for o in others), "the seed changes nothing")

    def test_stop_token(self):
        model = flashtrain.load_export(EXPORTS["gru_elman"], dtype=torch.float64)
        prompt = fixed_tokens(model.vocab_size, batch=1, steps=3, seed=2)
        free = model.generate(prompt, 8)[0, 3:].tolist()
        stop = free[2]
        stopped = model.generate(prompt, 8, stop_token=stop)
        self.assertEqual(stopped[0, 3:].tolist(), free[:free.index(stop) + 1])
        # rows stop independently: a stopped row is padded with the stop token
        rows = torch.cat([prompt, fixed_tokens(model.vocab_size, batch=1, steps=3, seed=9)])
        both = model.generate(rows, 8, stop_token=stop)
        first = both[0, 3:].tolist()
        self.assertEqual(first[:free.index(stop) + 1], free[:free.index(stop) + 1])
        self.assertTrue(all(t == stop for t in first[free.index(stop):]))
        self.assertEqual(model.generate(prompt, 0).shape, (1, 3))


class MalformedExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="flashtrain_malformed_")
        self.count = 0

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def edited(self, edit_config=None, edit_tensors=None, source="residual_lstm_ffn"):
        self.count += 1
        return copy_export(EXPORTS[source], os.path.join(self.tmp, str(self.count)),
                           edit_config, edit_tensors)

    def assertRefused(self, directory, message):
        with self.assertRaises(ValueError) as caught:
            flashtrain.load_export(directory)
        self.assertIsInstance(caught.exception, flashtrain.ExportError)
        self.assertIn(message, str(caught.exception))

    def test_missing_files(self):
        self.assertRefused(self.tmp, "has no manifest.json, so it is not a `flashtrain export` "
                                     "directory")
        directory = self.edited()
        os.remove(os.path.join(directory, "model.safetensors"))
        self.assertRefused(directory, "has no model.safetensors, which manifest.json lists")

    def test_unreadable_files(self):
        directory = self.edited()
        with open(os.path.join(directory, "model.safetensors"), "wb") as f:
            f.write(b"not a safetensors file")
        reseal(directory)
        self.assertRefused(directory, "model.safetensors cannot be read")
        directory = self.edited()
        with open(os.path.join(directory, "config.json"), "w") as f:
            f.write("{")
        reseal(directory)
        self.assertRefused(directory, "config.json is not valid JSON")
        with self.assertRaisesRegex(ValueError, "dtype must be a floating torch.dtype"):
            flashtrain.load_export(EXPORTS["residual_lstm_ffn"], dtype=torch.int32)

    def test_not_an_export(self):
        self.assertRefused(self.edited(lambda c: c.update(format_version=2)),
                           "is not a flashtrain export of format version 1")
        self.assertRefused(self.edited(lambda c: c.pop("d_model")),
                           "d_model must be an integer >= 1, got None")

    def test_unknown_block_kind(self):
        self.assertRefused(self.edited(lambda c: c.update(blocks=["lstm", "mamba"])),
                           "block 1 is a mamba block")
        self.assertRefused(self.edited(lambda c: c.update(blocks=["slstm", "lstm"]),
                                       source="plain_lstm"),
                           "block 0 is a slstm block; a plain model has lstm, gru, elman blocks")

    def test_shapes_contradicting_the_config(self):
        self.assertRefused(self.edited(lambda c: c.update(n_heads=4, head_dim=4)),
                           "blocks.0.mixer.r has shape [4, 2, 8, 8], but config.json implies "
                           "[4, 4, 4, 4]")
        self.assertRefused(self.edited(lambda c: c.update(vocab_size=12)),
                           "embedding.weight has shape [11, 16], but config.json implies [12, 16]")

    def test_missing_and_unexpected_tensors(self):
        self.assertRefused(self.edited(edit_tensors=lambda t: t.pop("blocks.1.mixer.b")),
                           "has no blocks.1.mixer.b")
        self.assertRefused(self.edited(edit_tensors=lambda t: t.update(extra=torch.zeros(2))),
                           "holds extra, which the model")
        self.assertRefused(self.edited(edit_tensors=lambda t: t.update(
            {"blocks.0.ffn.up.weight": torch.zeros(64, 8)})),
            "blocks.0.ffn.up.weight has shape [64, 8], but config.json implies [64, 16]")

    def test_a_flipped_bit_in_the_weights_is_refused(self):
        directory = self.edited()
        path = os.path.join(directory, "model.safetensors")
        with open(path, "r+b") as f:
            data = bytearray(f.read())
            data[-5] ^= 0x01  # in the last tensor's bytes: the file still parses
            f.seek(0)
            f.write(data)
        self.assertRefused(directory, f"{path} is corrupt or was edited: FNV-1a checksum")

    def test_an_edited_config_is_refused(self):
        directory = self.edited()
        path = os.path.join(directory, "config.json")
        with open(path) as f:
            text = f.read()
        at = text.index('"norm_eps": ') + len('"norm_eps": ')  # e.g. 1e-05 -> 2e-05, same size
        self.assertTrue(text[at].isdigit(), text[at:at + 8])
        with open(path, "w") as f:
            f.write(text[:at] + ("2" if text[at] != "2" else "3") + text[at + 1:])
        self.assertRefused(directory, f"{path} is corrupt or was edited: FNV-1a checksum")
        directory = self.edited()
        with open(os.path.join(directory, "config.json"), "a") as f:
            f.write("\n")
        self.assertRefused(directory, "config.json has")  # ... bytes; manifest.json says ...

    def test_a_manifest_that_does_not_describe_the_export(self):
        directory = self.edited()
        with open(os.path.join(directory, "manifest.json"), "w") as f:
            f.write("{")
        self.assertRefused(directory, "manifest.json is not valid JSON")
        directory = self.edited()
        path = os.path.join(directory, "manifest.json")
        with open(path) as f:
            manifest = json.load(f)
        del manifest["files"]["config.json"]
        with open(path, "w") as f:
            json.dump(manifest, f)
        self.assertRefused(directory, "manifest.json does not list config.json")
        checkpoints = os.path.join(_tmp, "residual_lstm_ffn", "checkpoints")
        steps = sorted(n for n in os.listdir(checkpoints) if n.startswith("step_") and "." not in n)
        step = os.path.join(checkpoints, steps[-1])
        self.assertRefused(step, "is a flashtrain 'checkpoint' directory, not an export")

    def test_the_checksum_is_the_trainers(self):
        directory = EXPORTS["residual_lstm_ffn"]
        with open(os.path.join(directory, "manifest.json")) as f:
            files = json.load(f)["files"]
        self.assertIn("model.safetensors", files)
        for name, entry in files.items():
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                data = f.read()
            self.assertEqual(torch.ops.flashtrain.fnv1a64_of_file(path), entry["fnv1a64"], name)
            self.assertEqual(fnv1a64(data), entry["fnv1a64"], name)
        empty = os.path.join(self.tmp, "empty")
        open(empty, "wb").close()
        self.assertEqual(torch.ops.flashtrain.fnv1a64_of_file(empty), "cbf29ce484222325")

    def test_bad_tokens(self):
        model = flashtrain.load_export(EXPORTS["residual_lstm_ffn"])
        with self.assertRaisesRegex(ValueError, r"token ids must lie in \[0, 11\), got 0..11"):
            model(torch.tensor([[0, 11]]))
        with self.assertRaisesRegex(ValueError, "tokens must be integers"):
            model(torch.zeros(2, 3))


if __name__ == "__main__":
    unittest.main()
