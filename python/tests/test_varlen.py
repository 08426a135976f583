"""flashrnn_varlen on the CPU (float64): sequences laid back to back give what
each sequence gives run alone, states and gradients; the layout packs rows
and resets where a sequence starts; bad boundaries are named."""
import unittest

import torch

from flashtrain import flashrnn, flashrnn_varlen
from flashtrain._varlen import Segments, varlen_layout

CELLS = {"lstm": (4, 4, 2), "slstm": (4, 4, 4), "gru": (3, 4, 1), "elman": (1, 1, 1)}
LENGTHS = [5, 1, 3, 7, 2, 4]  # unsorted, one of length 1


def make(cell, lengths, N=2, D=3, initial=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    G, Gb, S = CELLS[cell]
    Wx = torch.randn(sum(lengths), G, N, D, generator=g, dtype=torch.float64)
    R = torch.randn(G, N, D, D, generator=g, dtype=torch.float64) / D ** 0.5
    b = torch.randn(Gb, N, D, generator=g, dtype=torch.float64) * 0.1
    s0 = None
    if initial:
        s0 = torch.randn(S, len(lengths), N, D, generator=g, dtype=torch.float64) * 0.5
        if cell == "slstm":
            s0[2] = s0[2].abs() + 1.0  # n > 0
    cu = torch.tensor([0] + lengths).cumsum(0)
    tensors = [t for t in (Wx, R, b, s0) if t is not None]
    for t in tensors:
        t.requires_grad_()
    return Wx, R, b, s0, cu, tensors


def one_by_one(Wx, R, b, s0, cu, cell):
    """Each sequence through flashrnn alone: (states [S, total, N, D], last [S, n, N, D])."""
    outs, lasts = [], []
    for k in range(cu.numel() - 1):
        x = Wx[cu[k]:cu[k + 1]].unsqueeze(0)  # [1, L, G, N, D]
        init = s0[:, k:k + 1].unsqueeze(2) if s0 is not None else None
        states, last = flashrnn(x, R, b, init, function=cell)
        outs.append(states[:, 0])
        lasts.append(last[:, 0, 0])
    return torch.cat(outs, 1), torch.stack(lasts, 1)


class VarlenTest(unittest.TestCase):
    def check_against_one_by_one(self, cell, initial):
        Wx, R, b, s0, cu, tensors = make(cell, LENGTHS, initial=initial)
        states, last = flashrnn_varlen(Wx, R, b, cu, s0, function=cell)
        expected_states, expected_last = one_by_one(Wx, R, b, s0, cu, cell)
        torch.testing.assert_close(states, expected_states, rtol=0, atol=1e-12)
        torch.testing.assert_close(last, expected_last, rtol=0, atol=1e-12)
        # Gradients: the same loss through both paths.
        weights = [torch.randn_like(states), torch.randn_like(last)]
        ours = torch.autograd.grad((states * weights[0]).sum() + (last * weights[1]).sum(), tensors)
        reference = torch.autograd.grad(
            (expected_states * weights[0]).sum() + (expected_last * weights[1]).sum(), tensors)
        for got, want in zip(ours, reference):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-12)

    def test_every_cell_equals_each_sequence_run_alone(self):
        for cell in CELLS:
            for initial in (False, True):
                with self.subTest(cell=cell, initial=initial):
                    self.check_against_one_by_one(cell, initial)

    def test_rows_are_shared_where_the_states_start_from_zero(self):
        # Longest first, each into the row with the most room left if it fits;
        # rows as long as the longest (7): [7], [5, 2], [4, 3], [1].
        layout = varlen_layout(torch.tensor([0] + LENGTHS).cumsum(0), sum(LENGTHS))
        self.assertEqual((layout.rows, layout.T), (4, 7))
        self.assertEqual(layout.reset_mask.sum().item(), 2)  # the 2 after the 5 and the 3 after the 4
        self.assertEqual(sorted(layout.slots.tolist()), sorted(set(layout.slots.tolist())))
        alone = varlen_layout(torch.tensor([0] + LENGTHS).cumsum(0), sum(LENGTHS), share_rows=False)
        self.assertEqual((alone.rows, alone.T, alone.reset_mask), (len(LENGTHS), 7, None))

    def test_one_sequence_is_flashrnn(self):
        Wx, R, b, _, _, _ = make("lstm", [6])
        states, last = flashrnn_varlen(Wx, R, b, [0, 6])
        expected, expected_last = flashrnn(Wx.unsqueeze(0), R, b)
        torch.testing.assert_close(states, expected[:, 0], rtol=0, atol=0)
        torch.testing.assert_close(last, expected_last[:, :, 0], rtol=0, atol=0)

    def test_gradcheck(self):
        Wx, R, b, s0, cu, _ = make("gru", [2, 3, 1], N=1, D=2, initial=True)
        self.assertTrue(torch.autograd.gradcheck(
            lambda *t: flashrnn_varlen(*t[:3], cu, t[3], function="gru"), (Wx, R, b, s0)))

    def test_bad_boundaries_and_states_are_named(self):
        Wx, R, b, _, _, _ = make("lstm", [3, 2])
        for cu, words in (([1, 3, 5], "start at 0"), ([0, 3, 4], "end at the 5 tokens"),
                          ([0, 3, 3, 5], "at least 1"), ([0, 5], None)):
            if words is None:
                flashrnn_varlen(Wx, R, b, cu)  # one sequence of all five: fine
                continue
            with self.assertRaises(ValueError) as e:
                flashrnn_varlen(Wx, R, b, cu)
            self.assertIn(words, str(e.exception))
        with self.assertRaises(ValueError) as e:
            flashrnn_varlen(Wx, R, b, torch.tensor([0.0, 3.0, 5.0]))
        self.assertIn("int32 or int64", str(e.exception))
        with self.assertRaises(ValueError) as e:
            flashrnn_varlen(Wx, R, b, [0, 3, 5], torch.zeros(2, 3, 2, 3, dtype=torch.float64))
        self.assertIn("[S, 2, 2, 3]", str(e.exception))
        with self.assertRaises(ValueError) as e:
            flashrnn_varlen(Wx.unsqueeze(0), R, b, [0, 3, 5])
        self.assertIn("[total, G, N, D]", str(e.exception))


if __name__ == "__main__":
    unittest.main()


def stack_states(states):
    """Per-sequence block states (each batch 1) -> one state with a row per sequence."""
    if states[0] is None:
        return None
    return {key: torch.cat([s[key] for s in states], dim=1 if key == "states" else 0) for key in states[0]}


class BlocksVarlenTest(unittest.TestCase):
    """cu_seqlens through the blocks and the language model: each sequence as if alone."""

    def setUp(self):
        torch.manual_seed(0)

    def test_blocks_from_their_states_equal_each_sequence_alone(self):
        import flashtrain.nn as fnn
        from flashtrain.modules import Block, LinearScanMixer
        dim, lengths, prefixes = 16, [5, 1, 7, 3], [2, 4, 1, 6]
        blocks = {
            "slstm (conv 4)": fnn.SLSTMBlock(dim, num_heads=2, conv_kernel=4),
            "slstm (no conv)": fnn.SLSTMBlock(dim, num_heads=2, conv_kernel=0),
            "lstm": fnn.LSTMBlock(dim, num_heads=2),
            "gru": fnn.RecurrentBlock(dim, num_heads=4, kind="gru"),
            "linear_scan": Block("linear_scan", LinearScanMixer(dim, 24, "auto"), dim, 1e-5, 32),
        }
        cu = torch.tensor([0] + lengths).cumsum(0)
        for name, block in blocks.items():
            block = block.double()
            for with_states in (False, True):
                with self.subTest(block=name, with_states=with_states):
                    chunks = [torch.randn(n, dim, dtype=torch.float64, requires_grad=True) for n in lengths]
                    starts, expected, expected_states = [], [], []
                    for k, chunk in enumerate(chunks):
                        state = None
                        if with_states:
                            _, state = block(torch.randn(1, prefixes[k], dim, dtype=torch.float64))
                        starts.append(state)
                        y, s = block(chunk.unsqueeze(0), state)
                        expected.append(y[0])
                        expected_states.append(s)
                    if name == "linear_scan":  # no public block: the sequences made as a block makes them
                        y, state = block(torch.cat(chunks), stack_states(starts),
                                         Segments.of(cu, sum(lengths), "cpu", "test"))
                    else:
                        y, state = block(torch.cat(chunks), stack_states(starts), cu_seqlens=cu)
                    torch.testing.assert_close(y, torch.cat(expected), rtol=0, atol=1e-12)
                    for key, value in stack_states(expected_states).items():
                        torch.testing.assert_close(state[key], value, rtol=0, atol=1e-12, msg=key)
                    # The gradients of the inputs: one loss through both.
                    weights = torch.randn_like(y)
                    ours = torch.autograd.grad((y * weights).sum(), chunks)
                    theirs = torch.autograd.grad((torch.cat(expected) * weights).sum(), chunks)
                    for a, b in zip(ours, theirs):
                        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)

    def test_language_model_equals_each_sequence_alone(self):
        import flashtrain.nn as fnn
        lengths = [6, 2, 9, 1, 4]
        cu = torch.tensor([0] + lengths).cumsum(0)
        models = {
            "residual mix": fnn.LanguageModel(50, 16, ["lstm", "slstm", "linear_scan", "transformer", "gru",
                                                       "elman"], num_heads=2),
            "plain": fnn.LanguageModel(50, 16, ["lstm", "gru"], num_heads=1, structure="plain"),
        }
        for name, model in models.items():
            with self.subTest(model=name):
                model = model.double()
                tokens = torch.randint(0, 50, (sum(lengths),))
                logits = model(tokens, cu_seqlens=cu)
                expected = torch.cat([model(tokens[cu[k]:cu[k + 1]].unsqueeze(0))[0] for k in range(len(lengths))])
                torch.testing.assert_close(logits, expected, rtol=0, atol=1e-12)

    def test_errors_are_named(self):
        import flashtrain.nn as fnn
        block = fnn.LSTMBlock(16, num_heads=2)
        with self.assertRaises(ValueError) as e:
            block(torch.randn(1, 5, 16), cu_seqlens=[0, 5])
        self.assertIn("[total, dim]", str(e.exception))
        with self.assertRaises(ValueError) as e:
            block(torch.randn(5, 16), cu_seqlens=[0, 2, 4])
        self.assertIn("end at the 5 tokens", str(e.exception))
        model = fnn.LanguageModel(50, 16, ["transformer"], num_heads=2)
        with self.assertRaises(ValueError) as e:
            model.blocks[0].mixer(torch.randn(3, 16), {"keys": None}, Segments.of([0, 3], 3, "cpu", "x"))
        self.assertIn("no state", str(e.exception))
