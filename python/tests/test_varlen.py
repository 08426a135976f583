"""flashrnn_varlen on the CPU (float64): sequences laid back to back give what
each sequence gives run alone, states and gradients; the layout packs rows
and resets where a sequence starts; bad boundaries are named."""
import unittest

import torch

from flashtrain import flashrnn, flashrnn_varlen
from flashtrain._varlen import varlen_layout

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
