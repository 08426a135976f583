"""CPU tests of the flashtrain package: the vanilla paths, shapes, errors,
float64 gradcheck, the fake kernels (opcheck) and torch.compile(fullgraph=True).
They run against the build when FLASHTRAIN_LIBRARY points at build/python/_C.so
(ctest sets it) and against the installed package otherwise."""
import os
import subprocess
import sys
import unittest

import torch

import flashtrain
from flashtrain import flashrnn, gru_from_flashrnn, scan

CELLS = {"lstm": (4, 4, 2), "slstm": (4, 4, 4), "gru": (3, 4, 1), "elman": (1, 1, 1)}


def make(cell, B=2, T=5, N=2, D=3, dtype=torch.float64, initial=False, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    G, Gb, S = CELLS[cell]
    Wx = torch.randn(B, T, G, N, D, generator=g, dtype=dtype)
    R = torch.randn(G, N, D, D, generator=g, dtype=dtype) / D ** 0.5
    b = torch.randn(Gb, N, D, generator=g, dtype=dtype) * 0.1
    s0 = torch.randn(S, B, 1, N, D, generator=g, dtype=dtype) * 0.5 if initial else None
    if cell == "slstm" and s0 is not None:
        s0[2] = s0[2].abs() + 1.0  # n > 0
    tensors = [Wx, R, b] + ([s0] if initial else [])
    if grad:
        for t in tensors:
            t.requires_grad_()
    return Wx, R, b, s0


class ImportTest(unittest.TestCase):
    def test_import_is_fast_and_compiles_nothing(self):
        code = ("import time, torch; t = time.perf_counter(); import flashtrain; "
                "print(time.perf_counter() - t)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=os.environ, check=True)
        seconds = float(out.stdout.strip().splitlines()[-1])
        self.assertLess(seconds, 1.0, "import flashtrain (after torch) took too long")

    def test_ops_are_registered(self):
        for op in ("flashrnn_forward", "flashrnn_backward", "scan_forward", "scan_backward"):
            self.assertTrue(hasattr(torch.ops.flashtrain, op), op)


class FlashRnnShapesTest(unittest.TestCase):
    def test_shapes_every_cell(self):
        for cell, (G, Gb, S) in CELLS.items():
            for T in (1, 3):
                Wx, R, b, _ = make(cell, T=T, dtype=torch.float32, grad=False)
                states, last = flashrnn(Wx, R, b, function=cell)
                self.assertEqual(states.shape, (S, 2, T, 2, 3), cell)
                self.assertEqual(last.shape, (S, 2, 1, 2, 3), cell)
                self.assertEqual(states.dtype, torch.float32)
                torch.testing.assert_close(last, states[:, :, -1:])

    def test_flashrnn_backend_names_run_vanilla_on_cpu(self):
        Wx, R, b, _ = make("lstm", grad=False)
        ref, _ = flashrnn(Wx, R, b, backend="vanilla")
        for backend in ("auto", "cuda_fused", "cuda", "fused", "alternating", "vanilla_fwbw"):
            out, _ = flashrnn(Wx, R, b, backend=backend)
            torch.testing.assert_close(out, ref)

    def test_dtype_argument_casts(self):
        Wx, R, b, _ = make("lstm", dtype=torch.float32, grad=False)
        states, _ = flashrnn(Wx, R, b, dtype="bfloat16")
        self.assertEqual(states.dtype, torch.bfloat16)
        states, _ = flashrnn(Wx, R, b, dtype=torch.float64)
        self.assertEqual(states.dtype, torch.float64)

    def test_matches_torch_lstm(self):
        torch.manual_seed(0)
        B, T, I, H = 3, 6, 5, 4
        lstm = torch.nn.LSTM(I, H, batch_first=True).double()
        x = torch.randn(B, T, I, dtype=torch.float64)
        Wx = (x @ lstm.weight_ih_l0.T).view(B, T, 4, 1, H)
        R = lstm.weight_hh_l0.view(4, 1, H, H)
        b = (lstm.bias_ih_l0 + lstm.bias_hh_l0).view(4, 1, H)
        states, last = flashrnn(Wx, R, b, function="lstm")
        expected, (h, c) = lstm(x)
        torch.testing.assert_close(states[0, :, :, 0], expected)
        torch.testing.assert_close(last[1, :, 0, 0], c[0])

    def test_matches_torch_gru_and_flashrnn_slot_order(self):
        torch.manual_seed(0)
        B, T, I, H = 3, 6, 5, 4
        gru = torch.nn.GRU(I, H, batch_first=True).double()
        x = torch.randn(B, T, I, dtype=torch.float64)
        Wx = (x @ gru.weight_ih_l0.T).view(B, T, 3, 1, H)
        R = gru.weight_hh_l0.view(3, 1, H, H)
        b_ih, b_hh = gru.bias_ih_l0.view(3, 1, H), gru.bias_hh_l0.view(3, 1, H)
        b = torch.cat([b_ih[:2] + b_hh[:2], b_ih[2:], b_hh[2:]])  # r, z, n_input, n_recurrent
        states, _ = flashrnn(Wx, R, b, function="gru")
        expected, _ = gru(x)
        torch.testing.assert_close(states[0, :, :, 0], expected)
        # The same GRU in FlashRNN's slots: R (n, r, z), b (n_recurrent, r, z, n_input).
        R_f, b_f = R[[2, 0, 1]], b[[3, 0, 1, 2]]
        states_f, _ = flashrnn(*gru_from_flashrnn(Wx, R_f, b_f), function="gru")
        torch.testing.assert_close(states_f, states)

    def test_reset_mask_restarts_from_initial_states(self):
        Wx, R, b, s0 = make("lstm", initial=True, grad=False)
        mask = torch.zeros(2, 5, dtype=torch.bool)
        mask[:, 3] = True
        states, _ = flashrnn(Wx, R, b, s0, reset_mask=mask)
        tail, _ = flashrnn(Wx[:, 3:], R, b, s0)
        torch.testing.assert_close(states[:, :, 3:], tail)

    def test_forward_clip(self):
        Wx, R, b, _ = make("elman", grad=False)
        states, _ = flashrnn(Wx * 10, R, b, function="elman", forward_clip=0.5)
        self.assertLessEqual(states[0].abs().max().item(), 0.5)


class FlashRnnErrorsTest(unittest.TestCase):
    def assert_message(self, error, *parts):
        for part in parts:
            self.assertIn(part, str(error.exception))

    def test_wrong_gate_count_names_tensor_and_shapes(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx[:, :, :3], R, b)
        self.assert_message(e, "Wx", "[2, 5, 3, 2, 3]", "[*, *, 4, *, *]")

    def test_wrong_rank(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R[0], b)
        self.assert_message(e, "R", "[G, N, D, D]")

    def test_initial_states_shape(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R, b, torch.zeros(2, 2, 1, 2, 4, dtype=torch.float64))
        self.assert_message(e, "initial_states", "[2, 2, 1, 2, 4]")

    def test_dtype_mismatch_is_type_error(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(TypeError) as e:
            flashrnn(Wx, R.float(), b)
        self.assert_message(e, "R", "dtype")

    def test_unknown_function_and_backend(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R, b, function="rnn")
        self.assert_message(e, "rnn", "lstm, slstm, gru, elman")
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R, b, backend="triton")
        self.assert_message(e, "triton", "cuda_fused")

    def test_inputs_on_two_devices(self):
        # A meta tensor among CPU ones would reach the shape-only kernel.
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R.to("meta"), b)
        self.assert_message(e, "R is on meta", "Wx is on cpu")
        states = torch.zeros(2, Wx.shape[0], 1, Wx.shape[3], Wx.shape[4], device="meta")
        with self.assertRaises(ValueError) as e:
            flashrnn(Wx, R, b, states)
        self.assert_message(e, "states is on meta")

    def test_not_a_tensor(self):
        _, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(TypeError) as e:
            flashrnn([1.0], R, b)
        self.assert_message(e, "Wx")

    def test_reset_mask_dtype(self):
        Wx, R, b, _ = make("lstm", grad=False)
        with self.assertRaises(TypeError) as e:
            flashrnn(Wx, R, b, reset_mask=torch.zeros(2, 5))
        self.assert_message(e, "reset_mask")


class FlashRnnGradcheckTest(unittest.TestCase):
    def check(self, cell, initial, **options):
        Wx, R, b, s0 = make(cell, B=2, T=4, N=2, D=3, initial=initial)
        m0 = None
        if initial and cell == "slstm":  # the initial m gets no gradient by contract
            s0, m0 = s0[:3].detach().requires_grad_(), s0[3:].detach()
        inputs = (Wx, R, b) + ((s0,) if initial else ())

        def f(*args):
            s = args[3] if initial else None
            if m0 is not None:
                s = torch.cat([s, m0])
            states, last = flashrnn(*args[:3], s, function=cell, **options)
            if cell == "slstm":  # m gets no gradient by contract: check h only
                return states[0], last[0]
            return states, last

        self.assertTrue(torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-5))

    def test_every_cell(self):
        for cell in CELLS:
            for initial in (False, True):
                with self.subTest(cell=cell, initial=initial):
                    self.check(cell, initial)

    def test_reset_mask(self):
        mask = torch.zeros(2, 4, dtype=torch.bool)
        mask[0, 2] = True
        self.check("lstm", True, reset_mask=mask)

    def test_gradient_recurrent_cut_changes_only_the_recurrent_path(self):
        Wx, R, b, _ = make("elman")
        flashrnn(Wx, R, b, function="elman", gradient_recurrent_cut=True)[0].sum().backward()
        # Elman with the recurrent gradient cut: each step's δWx is its own tanh'.
        states, _ = flashrnn(Wx.detach(), R.detach(), b.detach(), function="elman")
        torch.testing.assert_close(Wx.grad[:, :, 0], (1 - states[0] ** 2))

    def test_no_grad_keeps_nothing(self):
        Wx, R, b, _ = make("lstm")
        with torch.no_grad():
            states, _ = flashrnn(Wx, R, b)
        self.assertFalse(states.requires_grad)


class OpcheckTest(unittest.TestCase):
    """torch.library.opcheck: schema, fake kernels, autograd registration, AOT dispatch."""

    def test_flashrnn_forward(self):
        for cell in CELLS:
            Wx, R, b, s0 = make(cell, initial=True)
            mask = torch.zeros(2, 5, dtype=torch.bool)
            args = (Wx, R, b, s0, mask, cell, "vanilla", False, 0.0, 0.0, True)
            torch.library.opcheck(torch.ops.flashtrain.flashrnn_forward.default, args)
            args = (Wx.detach(), R.detach(), b.detach(), None, None, cell, "auto", False, 0.0,
                    0.0, False)
            torch.library.opcheck(torch.ops.flashtrain.flashrnn_forward.default, args)

    def test_scan_forward(self):
        for layout, shape in (("bdt", (2, 3, 7)), ("btd", (2, 7, 3))):
            a = torch.rand(*shape, dtype=torch.float64, requires_grad=True)
            b = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
            x0 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
            for x0_or_none in (x0, None):
                args = (a, b, x0_or_none, layout, False, "auto")
                torch.library.opcheck(torch.ops.flashtrain.scan_forward.default, args)


def scan_reference(a, b, x0=None, reverse=False):
    """[B, D, T], float64 loop."""
    x = torch.zeros_like(a[..., 0]) if x0 is None else x0.clone()
    out = torch.empty_like(a)
    steps = range(a.shape[-1] - 1, -1, -1) if reverse else range(a.shape[-1])
    for t in steps:
        x = a[..., t] * x + b[..., t]
        out[..., t] = x
    return out


class ScanTest(unittest.TestCase):
    def test_matches_loop_every_option(self):
        torch.manual_seed(0)
        for T in (1, 3, 17, 64):
            a = torch.rand(2, 3, T, dtype=torch.float64)
            b = torch.randn(2, 3, T, dtype=torch.float64)
            x0 = torch.randn(2, 3, dtype=torch.float64)
            for reverse in (False, True):
                for init in (None, x0):
                    expected = scan_reference(a, b, init, reverse)
                    torch.testing.assert_close(scan(a, b, x0=init, reverse=reverse), expected)
                    x, last = scan(a.transpose(1, 2), b.transpose(1, 2), x0=init,
                                   reverse=reverse, layout="btd", return_last=True)
                    torch.testing.assert_close(x, expected.transpose(1, 2))
                    torch.testing.assert_close(last, expected[..., 0 if reverse else -1])

    def test_float32_and_bfloat16(self):
        a = torch.rand(2, 4, 9)
        b = torch.randn(2, 4, 9)
        expected = scan_reference(a.double(), b.double())
        torch.testing.assert_close(scan(a, b).double(), expected, rtol=1e-5, atol=1e-5)
        x = scan(a.bfloat16(), b.bfloat16())
        self.assertEqual(x.dtype, torch.bfloat16)
        torch.testing.assert_close(x.double(), expected, rtol=3e-2, atol=3e-2)

    def test_gradcheck(self):
        a = torch.rand(2, 3, 6, dtype=torch.float64, requires_grad=True)
        b = torch.randn(2, 3, 6, dtype=torch.float64, requires_grad=True)
        x0 = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
        for reverse in (False, True):
            self.assertTrue(torch.autograd.gradcheck(
                lambda a, b, x0: scan(a, b, x0=x0, reverse=reverse, return_last=True),
                (a, b, x0)))
        self.assertTrue(torch.autograd.gradcheck(lambda a, b: scan(a, b), (a, b)))

    def test_errors(self):
        a = torch.rand(2, 3, 6)
        with self.assertRaises(ValueError) as e:
            scan(a, torch.rand(2, 3, 5))
        self.assertIn("[2, 3, 5]", str(e.exception))
        with self.assertRaises(ValueError):
            scan(a, a, layout="tbd")
        with self.assertRaises(TypeError):
            scan(a, "tokens")
        with self.assertRaises(ValueError) as e:
            scan(a, a.to("meta"))
        self.assertIn("tokens is on meta but gates is on cpu", str(e.exception))


class CompileTest(unittest.TestCase):
    """fullgraph torch.compile through the fake kernels and the autograd pair.
    aot_eager: no C++ compiler involved (inductor runs in the GPU tests)."""

    def test_flashrnn_forward_and_backward(self):
        Wx, R, b, s0 = make("lstm", initial=True)

        def step(Wx, R, b, s0):
            states, last = flashrnn(Wx, R, b, s0, function="lstm")
            return (states.tanh().sum() + last.sum()) * 2

        compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
        loss = compiled(Wx, R, b, s0)
        grads = torch.autograd.grad(loss, (Wx, R, b, s0))
        expected = step(Wx, R, b, s0)
        expected_grads = torch.autograd.grad(expected, (Wx, R, b, s0))
        torch.testing.assert_close(loss, expected)
        for g, e in zip(grads, expected_grads):
            torch.testing.assert_close(g, e)

    def test_scan(self):
        a = torch.rand(2, 3, 8, dtype=torch.float64, requires_grad=True)
        b = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)

        def f(a, b):
            return scan(a.sigmoid(), b).square().sum()

        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        g = torch.autograd.grad(compiled(a, b), (a, b))
        e = torch.autograd.grad(f(a, b), (a, b))
        for x, y in zip(g, e):
            torch.testing.assert_close(x, y)


if __name__ == "__main__":
    unittest.main()
