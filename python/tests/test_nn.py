"""flashtrain.nn against torch.nn on the CPU in float64: every option of the
constructor and the call, packed and padded variable-length batches, weights
to and from torch.nn, gradients."""
import itertools
import json
import unittest

import torch
from torch.nn.utils.rnn import pack_padded_sequence

import flashtrain.nn as fnn

KINDS = {"LSTM": (fnn.LSTM, torch.nn.LSTM), "GRU": (fnn.GRU, torch.nn.GRU), "RNN": (fnn.RNN, torch.nn.RNN)}
F64 = torch.float64
TOL = {"atol": 1e-12, "rtol": 0.0}


def pair(kind, input_size=4, hidden_size=6, seed=0, **kwargs):
    """A torch.nn module and ours with the same weights."""
    ours_cls, theirs_cls = KINDS[kind]
    torch.manual_seed(seed)
    theirs = theirs_cls(input_size, hidden_size, dtype=F64, **kwargs)
    return fnn.__dict__[kind].from_torch(theirs), theirs


def initial_states(kind, layers, batch, hidden_size=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(layers, batch, hidden_size, generator=g, dtype=F64)
    return (h, torch.randn(layers, batch, hidden_size, generator=g, dtype=F64)) if kind == "LSTM" else h


def assert_same_results(test, ours, theirs, msg):
    (out_a, state_a), (out_b, state_b) = ours, theirs
    if isinstance(out_a, torch.nn.utils.rnn.PackedSequence):
        test.assertTrue(torch.equal(out_a.batch_sizes, out_b.batch_sizes), msg)
        out_a, out_b = out_a.data, out_b.data
    torch.testing.assert_close(out_a, out_b, **TOL, msg=msg)
    for a, b in zip(state_a if isinstance(state_a, tuple) else (state_a,),
                    state_b if isinstance(state_b, tuple) else (state_b,)):
        torch.testing.assert_close(a, b, **TOL, msg=msg)


class SameAsTorchNn(unittest.TestCase):
    def test_every_option(self):
        B, T = 3, 5
        for kind, layers, bidirectional, batch_first, bias, with_states in itertools.product(
                KINDS, (1, 2, 3), (False, True), (False, True), (True, False), (False, True)):
            msg = f"{kind} layers={layers} bidirectional={bidirectional} batch_first={batch_first} " \
                  f"bias={bias} states={with_states}"
            ours, theirs = pair(kind, num_layers=layers, bidirectional=bidirectional,
                                batch_first=batch_first, bias=bias)
            x = torch.randn((B, T, 4) if batch_first else (T, B, 4), dtype=F64)
            hx = initial_states(kind, layers * (2 if bidirectional else 1), B) if with_states else None
            assert_same_results(self, ours(x, hx), theirs(x, hx), msg)

    def test_unbatched_input(self):
        for kind in KINDS:
            ours, theirs = pair(kind, num_layers=2, bidirectional=True)
            x = torch.randn(5, 4, dtype=F64)
            hx = initial_states(kind, 4, 1)
            hx = tuple(h[:, 0] for h in hx) if kind == "LSTM" else hx[:, 0]
            assert_same_results(self, ours(x, hx), theirs(x, hx), kind)

    def test_packed_sequences_sorted_and_unsorted(self):
        x = torch.randn(4, 6, 4, dtype=F64)
        for kind, lengths, bidirectional in itertools.product(KINDS, ([6, 5, 3, 1], [3, 6, 1, 5]), (False, True)):
            enforce_sorted = lengths == sorted(lengths, reverse=True)
            msg = f"{kind} lengths={lengths} bidirectional={bidirectional}"
            ours, theirs = pair(kind, num_layers=2, bidirectional=bidirectional, batch_first=True)
            packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=True, enforce_sorted=enforce_sorted)
            hx = initial_states(kind, 4 if bidirectional else 2, 4)
            assert_same_results(self, ours(packed, hx), theirs(packed, hx), msg)
            assert_same_results(self, ours(packed), theirs(packed), msg + " no states")

    def test_lengths_on_a_padded_batch_equal_the_packed_call(self):
        x = torch.randn(4, 6, 4, dtype=F64)
        lengths = [3, 6, 1, 5]
        for kind in KINDS:
            ours, theirs = pair(kind, num_layers=2, bidirectional=True, batch_first=True)
            out, state = ours(x, lengths=lengths)
            packed_out, packed_state = theirs(pack_padded_sequence(x, torch.tensor(lengths), batch_first=True,
                                                                   enforce_sorted=False))
            padded, _ = torch.nn.utils.rnn.pad_packed_sequence(packed_out, batch_first=True)
            torch.testing.assert_close(out, padded, **TOL, msg=kind)  # zero past each length, as torch pads
            assert_same_results(self, (out, state), (padded, packed_state), kind)

    def test_gradients_equal_torch_nn(self):
        # Without initial states the packed sequences share rows (3 and 2 in one of 5).
        lengths = torch.tensor([5, 2, 4, 3])
        for kind, packed, with_states in itertools.product(KINDS, (False, True), (True, False)):
            ours, theirs = pair(kind, num_layers=2, bidirectional=True, batch_first=True)
            x = torch.randn(4, 5, 4, dtype=F64)
            hx = initial_states(kind, 4, 4)
            grads = []
            for module in (ours, theirs):
                xi = x.clone().requires_grad_()
                hi = tuple(h.clone().requires_grad_() for h in hx) if kind == "LSTM" else hx.clone().requires_grad_()
                inp = pack_padded_sequence(xi, lengths, batch_first=True, enforce_sorted=False) if packed else xi
                out, state = module(inp, hi) if with_states else module(inp)
                out = out.data if packed else out
                weights = torch.linspace(-1, 1, out.numel(), dtype=F64).view_as(out)
                loss = (out * weights).sum() + sum((s ** 2).sum() for s in (state if kind == "LSTM" else (state,)))
                loss.backward()
                leaves = [xi] + ((list(hi) if kind == "LSTM" else [hi]) if with_states else [])
                grads.append([t.grad for t in leaves + list(module.parameters())])
            for a, b in zip(*grads):
                torch.testing.assert_close(a, b, atol=1e-10, rtol=0.0,
                                           msg=f"{kind} packed={packed} with_states={with_states}")

    def test_gradcheck(self):
        for kind in KINDS:
            ours, _ = pair(kind, input_size=2, hidden_size=3, num_layers=2, bidirectional=True)
            x = torch.randn(3, 2, 2, dtype=F64, requires_grad=True)
            names = [n for n, _ in ours.named_parameters()]
            params = tuple(p.detach().clone().requires_grad_() for p in ours.parameters())

            def run(x, *p):
                out, state = torch.func.functional_call(ours, dict(zip(names, p)), (x,))
                return (out,) + (state if isinstance(state, tuple) else (state,))
            self.assertTrue(torch.autograd.gradcheck(run, (x,) + params), kind)


class Heads(unittest.TestCase):
    def test_num_heads_is_a_block_diagonal_recurrence(self):
        H, heads = 6, 2
        D = H // heads
        for kind in KINDS:
            ours_cls, theirs_cls = KINDS[kind]
            ours = ours_cls(4, H, num_layers=2, dtype=F64, num_heads=heads)
            self.assertEqual(tuple(ours.weight_hh_l0.shape), (ours.weight_hh_l0.shape[0], D))
            theirs = theirs_cls(4, H, num_layers=2, dtype=F64)
            state = {}
            for name, value in ours.state_dict().items():
                if name.startswith("weight_hh"):  # each head's rows read only its own units
                    dense = torch.zeros(value.shape[0], H, dtype=F64)
                    for row in range(value.shape[0]):
                        head = (row % H) // D
                        dense[row, head * D:(head + 1) * D] = value[row]
                    value = dense
                state[name] = value
            theirs.load_state_dict(state)
            x = torch.randn(5, 3, 4, dtype=F64)
            assert_same_results(self, ours(x), theirs(x), kind)


class ToAndFromTorch(unittest.TestCase):
    def test_round_trip_keeps_every_weight(self):
        for kind in KINDS:
            ours, theirs = pair(kind, num_layers=3, bidirectional=True, bias=False, batch_first=True, dropout=0.25)
            self.assertEqual(ours.batch_first, True)
            self.assertEqual(ours.dropout, 0.25)
            back = ours.to_torch()
            self.assertIs(type(back), type(theirs))
            for (name, a), (name_b, b) in zip(theirs.state_dict().items(), back.state_dict().items()):
                self.assertEqual(name, name_b)
                self.assertTrue(torch.equal(a, b), name)
            self.assertEqual(set(ours.state_dict()), set(theirs.state_dict()))

    def test_torch_nn_helpers_code_calls(self):
        for bias in (True, False):
            ours, theirs = pair("LSTM", num_layers=2, bidirectional=True, bias=bias)
            ours.flatten_parameters()  # a no-op, as code written for cuDNN calls it
            self.assertEqual([[tuple(w.shape) for w in group] for group in ours.all_weights],
                             [[tuple(w.shape) for w in group] for group in theirs.all_weights])
            for a, b in zip(sum(ours.all_weights, []), sum(theirs.all_weights, [])):
                self.assertTrue(torch.equal(a, b))

    def test_state_dict_of_torch_nn_loads_directly(self):
        theirs = torch.nn.LSTM(4, 6, num_layers=2, dtype=F64)
        ours = fnn.LSTM(4, 6, num_layers=2, dtype=F64)
        ours.load_state_dict(theirs.state_dict())
        x = torch.randn(5, 3, 4, dtype=F64)
        assert_same_results(self, ours(x), theirs(x), "load_state_dict")

    def test_dropout_between_layers_only_in_training(self):
        torch.manual_seed(0)
        ours = fnn.LSTM(4, 6, num_layers=2, dropout=0.5, dtype=F64)
        x = torch.randn(5, 3, 4, dtype=F64)
        ours.eval()
        a, _ = ours(x)
        b, _ = ours(x)
        self.assertTrue(torch.equal(a, b))
        ours.train()
        c, _ = ours(x)
        self.assertFalse(torch.equal(a, c))
        single = fnn.LSTM(4, 6, num_layers=1, dropout=0.5, dtype=F64)  # no layer after the last: none
        self.assertTrue(torch.equal(single(x)[0], single(x)[0]))


class FlashtrainBlocks(unittest.TestCase):
    """The sLSTM layer and the residual blocks: the trainer's initialisation, chunks
    with carried state equal to the whole, gradients."""

    def test_initialisation_is_the_trainers(self):
        from flashtrain.modules import DEFAULTS
        slstm = fnn.SLSTM(64, num_heads=4).requires_grad_(False)
        D = 16
        for head in range(4):
            torch.testing.assert_close(slstm.b[1, head], torch.linspace(DEFAULTS["slstm_forget_bias_min"],
                                                                        DEFAULTS["slstm_forget_bias_max"], D))
        self.assertEqual(float(slstm.b[[0, 2, 3]].abs().max()), 0.0)
        self.assertEqual(float(slstm.r.abs().max()), 0.0)  # xLSTM starts R at zero
        self.assertTrue(torch.equal(slstm.group_norm.weight, torch.ones(64)))
        self.assertLessEqual(float(slstm.conv.weight.abs().max()), 1.0 / DEFAULTS["conv_kernel"] ** 0.5)

        block = fnn.LSTMBlock(256, num_heads=4, num_blocks=2).requires_grad_(False)
        mixer = block.mixer
        torch.testing.assert_close(mixer.b[1, 0], torch.linspace(DEFAULTS["retain_bias_min"],
                                                                 DEFAULTS["retain_bias_max"], 64))
        bound = DEFAULTS["recurrent_init_scale"] / 64 ** 0.5
        self.assertLessEqual(float(mixer.r.abs().max()), bound)
        self.assertGreater(float(mixer.r.abs().max()), 0.9 * bound)
        self.assertAlmostEqual(float(mixer.wx.weight.std()), (2 / (5 * 256)) ** 0.5, delta=0.003)
        self.assertAlmostEqual(float(mixer.out_proj.weight.std()), 2 / (2 * 256 ** 0.5), delta=0.003)
        self.assertEqual(block.ffn.gate.out_features, 384)  # 4/3 x 256 rounded up to 64
        self.assertTrue(torch.equal(block.mixer_norm.weight, torch.ones(256)))
        self.assertIsNone(fnn.SLSTMBlock(64, ffn_factor=0).ffn)

    def test_chunks_with_state_equal_the_whole(self):
        torch.manual_seed(0)
        for block in (fnn.SLSTMBlock(32, num_heads=2), fnn.LSTMBlock(32, num_heads=2),
                      fnn.RecurrentBlock(32, 2, "gru"), fnn.RecurrentBlock(32, 2, "elman"), fnn.SLSTM(32, 4)):
            block = block.double()
            with torch.no_grad():  # the sLSTM's R starts at zero: make it matter
                for p in block.parameters():
                    p.add_(0.05 * torch.randn_like(p))
            x = torch.randn(2, 9, 32, dtype=F64)
            whole, _ = block(x)
            first, state = block(x[:, :4])
            second, _ = block(x[:, 4:], state)
            torch.testing.assert_close(torch.cat([first, second], 1), whole, **TOL, msg=type(block).__name__)

    def test_gradcheck(self):
        torch.manual_seed(0)
        block = fnn.SLSTMBlock(8, num_heads=2, conv_kernel=2).double()
        x = torch.randn(2, 3, 8, dtype=F64, requires_grad=True)
        self.assertTrue(torch.autograd.gradcheck(lambda x: block(x)[0], (x,)))

    def test_language_model_from_scratch(self):
        torch.manual_seed(0)
        model = fnn.LanguageModel(11, 32, ["lstm", "slstm", "linear_scan", "transformer"], num_heads=2)
        tokens = torch.randint(0, 11, (2, 7))
        self.assertEqual(tuple(model(tokens).shape), (2, 7, 11))
        self.assertAlmostEqual(float(model.embedding.weight.detach().std()), (2 / (5 * 32)) ** 0.5, delta=0.03)
        self.assertEqual(model.blocks[1].ffn.gate.out_features, 64)  # 4/3 x 32 rounded up to 64
        plain = fnn.LanguageModel(11, 32, ["lstm"] * 2, num_heads=1, structure="plain", tie_embeddings=False)
        self.assertIsNone(plain.final_norm)
        self.assertEqual(tuple(plain.generate(tokens[0], max_new_tokens=3).shape), (10,))
        stats = plain.generation_stats  # the prompt in one pass, then 3 steps
        self.assertEqual((stats["prompt_tokens"], stats["new_tokens"]), (7, 3))
        self.assertTrue(stats["prefill_seconds"] > 0 and stats["decode_seconds"] > 0, stats)
        self.assertAlmostEqual(stats["decode_tokens_per_second"], 3 / stats["decode_seconds"])
        plain.generate(tokens, max_new_tokens=0)
        self.assertEqual((plain.generation_stats["new_tokens"], plain.generation_stats["decode_tokens_per_second"]),
                         (0, 0.0))
        self.assertAlmostEqual(plain.generation_stats["prefill_tokens_per_second"],
                               2 * 7 / plain.generation_stats["prefill_seconds"])
        for make, words in [(lambda: fnn.LanguageModel(11, 32, ["slstm"], structure="plain"),
                             "blocks must be a non-empty list of lstm, gru, elman"),
                            (lambda: fnn.LanguageModel(11, 32, []), "blocks must be a non-empty list")]:
            with self.assertRaises(ValueError) as caught:
                make()
            self.assertIn(words, str(caught.exception))

    def test_every_block_kind_of_the_models_list_builds(self):
        # The kinds come from the C++ models' one list through the extension: each
        # builds and runs, and a plain model takes exactly the ones the list marks plain.
        from flashtrain import modules
        table = json.loads(torch.ops.flashtrain.block_kinds())
        self.assertEqual(modules.BLOCK_KINDS, tuple(row["name"] for row in table))
        self.assertEqual(set(modules.CELLS), {row["cell"] for row in table if row["cell"]})
        tokens = torch.randint(0, 11, (2, 5))
        for row in table:
            with self.subTest(kind=row["name"]):
                model = fnn.LanguageModel(11, 16, [row["name"]], num_heads=2)
                self.assertEqual(tuple(model(tokens).shape), (2, 5, 11))
                if row["plain"]:
                    fnn.LanguageModel(11, 16, [row["name"]], num_heads=1, structure="plain")
                else:
                    with self.assertRaises(ValueError):
                        fnn.LanguageModel(11, 16, [row["name"]], num_heads=1, structure="plain")

    def test_bad_options_say_what(self):
        for make, words in [(lambda: fnn.SLSTM(30, num_heads=4), "dim 30 is not a multiple of num_heads 4"),
                            (lambda: fnn.RecurrentBlock(32, 2, "slstm"), "kind must be lstm, gru or elman"),
                            (lambda: fnn.SLSTMBlock(32, ffn_factor=-1), "ffn_factor must not be negative"),
                            (lambda: fnn.SLSTM(32, conv_kernel=-1), "conv_kernel must be >= 0")]:
            with self.assertRaises(ValueError, msg=words) as caught:
                make()
            self.assertIn(words, str(caught.exception))


class Errors(unittest.TestCase):
    def test_unsupported_options_and_bad_inputs_say_what(self):
        cases = [
            (lambda: fnn.LSTM(4, 6, proj_size=3), "proj_size=3 is not supported"),
            (lambda: fnn.RNN(4, 6, nonlinearity="relu"), "nonlinearity='relu' is not supported"),
            (lambda: fnn.LSTM(4, 6, num_heads=4), "not a multiple of num_heads"),
            (lambda: fnn.LSTM(4, 0), "hidden_size must be a positive int"),
            (lambda: fnn.LSTM(4, 6)(torch.randn(5, 3, 5)), "input.size(-1) must be input_size = 4"),
            (lambda: fnn.GRU(4, 6)(torch.randn(5, 3, 4), torch.zeros(2, 3, 6)), "hx must be [1, 3, 6]"),
            (lambda: fnn.LSTM(4, 6)(torch.randn(5, 3, 4), torch.zeros(1, 3, 6)), "hx must be a tuple (h_0, c_0)"),
            (lambda: fnn.LSTM(4, 6, batch_first=True)(torch.randn(3, 5, 4), lengths=[5, 6, 1]),
             "lengths must be 3 values in 1..5"),
            (lambda: fnn.LSTM(4, 6, num_heads=2).to_torch(), "num_heads is 2, not 1"),
            (lambda: fnn.GRU.from_torch(torch.nn.LSTM(4, 6)), "expected a torch.nn.GRU"),
            (lambda: fnn.LSTM(4, 6)(torch.randn(5, 3, 4, dtype=F64)), "input is torch.float64"),
        ]
        for make, words in cases:
            with self.assertRaises((ValueError, TypeError), msg=words) as caught:
                make()
            self.assertIn(words, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
