"""GPU tests of the flashtrain package (skipped without CUDA): every cell x
bf16/fp16/fp32 x a size grid against the float64 vanilla backend (the
reference of docs/CELLS.md), flashrnn_varlen in every backend, the scan against float64, torch.compile with
inductor on a small LSTM LM, CUDA graph capture, flashtrain.nn (dtypes,
torch.compile, graph capture, packed sequences) and import time."""
import itertools
import os
import subprocess
import sys
import unittest

import torch

import flashtrain
from flashtrain import flashrnn, scan

CUDA = torch.cuda.is_available()
CELLS = {"lstm": (4, 4, 2), "slstm": (4, 4, 4), "gru": (3, 4, 1), "elman": (1, 1, 1)}
TOLERANCE = {torch.float32: 2e-3, torch.bfloat16: 6e-2, torch.float16: 1e-2}
# (B, T, N, D): batch 2-64, head dims 32-1024, sequence 1, 3 and 1024, heads 1-128.
# The grid spans each axis without the full product (that would take hours).
GRID = [
    (2, 1, 1, 32), (2, 3, 4, 64), (16, 3, 1, 128), (64, 3, 2, 256), (8, 1, 1, 512),
    (2, 3, 1, 1024), (4, 3, 128, 32), (16, 1024, 1, 64), (4, 1024, 2, 128),
]
FULL = os.environ.get("FLASHTRAIN_FULL_GRID") == "1"
if FULL:
    GRID = list(itertools.product((2, 16, 64), (1, 3, 1024), (1, 4, 128), (32, 64, 128, 256, 512, 1024)))


def inputs(cell, B, T, N, D, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    G, Gb, S = CELLS[cell]
    Wx = torch.randn(B, T, G, N, D, device="cuda", generator=g)
    R = torch.randn(G, N, D, D, device="cuda", generator=g) / D ** 0.5
    b = torch.randn(Gb, N, D, device="cuda", generator=g) * 0.1
    return [t.to(dtype).requires_grad_() for t in (Wx, R, b)]


@unittest.skipUnless(CUDA, "no CUDA device")
class GridTest(unittest.TestCase):
    def test_every_cell_dtype_and_size(self):
        for cell, dtype, (B, T, N, D) in itertools.product(CELLS, TOLERANCE, GRID):
            if B * T * N * D > (1 << 24) or N * D * D * CELLS[cell][0] > (1 << 26):
                continue  # keeps memory and time in bounds
            with self.subTest(cell=cell, dtype=dtype, B=B, T=T, N=N, D=D):
                Wx, R, b = inputs(cell, B, T, N, D, dtype)
                states, last = flashrnn(Wx, R, b, function=cell, backend="auto")
                grads = torch.randn_like(states)
                torch.autograd.backward((states,), (grads,))
                ref = [t.detach().double().requires_grad_() for t in (Wx, R, b)]
                ref_states, ref_last = flashrnn(*ref, function=cell, backend="vanilla")
                torch.autograd.backward((ref_states,), (grads.double(),))
                tol = TOLERANCE[dtype] * (4 if T == 1024 else 1)
                h = slice(0, 1) if cell == "slstm" else slice(None)
                torch.testing.assert_close(states[h].double(), ref_states[h], rtol=tol, atol=tol)
                torch.testing.assert_close(last.double(), ref_last, rtol=tol, atol=tol)
                if cell != "slstm":
                    for t, r in zip((Wx, R, b), ref):
                        scale = r.grad.abs().max().clamp_min(1.0)
                        torch.testing.assert_close(t.grad.double() / scale, r.grad / scale,
                                                   rtol=tol * 4, atol=tol * 4)

    def test_flashrnn_backend_names(self):
        for backend in ("cuda_fused", "cuda", "vanilla", "auto"):
            Wx, R, b = inputs("lstm", 4, 16, 2, 64, torch.bfloat16)
            states, _ = flashrnn(Wx, R, b, backend=backend)
            self.assertEqual(states.shape, (2, 4, 16, 2, 64))


@unittest.skipUnless(CUDA, "no CUDA device")
class VarlenGpuTest(unittest.TestCase):
    def test_every_backend_against_float64_sequences_alone(self):
        # Rows shared (the reset mask in every backend) and rows of their own
        # (initial states); lengths from 1 to 300, unsorted.
        lengths = [300, 1, 77, 150, 2, 64, 299]
        cu = torch.tensor([0] + lengths).cumsum(0)
        # The fused kernels run half precision (bf16 here), the others float32.
        for cell, backend, initial in itertools.product(("lstm", "gru", "slstm"), ("fused", "alternating",
                                                                                    "vanilla"), (False, True)):
            with self.subTest(cell=cell, backend=backend, initial=initial):
                dtype = torch.bfloat16 if backend == "fused" else torch.float32
                tol = TOLERANCE[dtype] * 2
                G, Gb, S = CELLS[cell]
                g = torch.Generator(device="cuda").manual_seed(1)
                N, D = 2, 64
                Wx = torch.randn(sum(lengths), G, N, D, device="cuda", generator=g).to(dtype)
                R = (torch.randn(G, N, D, D, device="cuda", generator=g) / D ** 0.5).to(dtype)
                b = (torch.randn(Gb, N, D, device="cuda", generator=g) * 0.1).to(dtype)
                s0 = None
                if initial:
                    s0 = torch.randn(S, len(lengths), N, D, device="cuda", generator=g) * 0.5
                    if cell == "slstm":
                        s0[2] = s0[2].abs() + 1.0
                states, last = flashtrain.flashrnn_varlen(Wx, R, b, cu, s0, function=cell, backend=backend)
                h = slice(0, 1) if cell == "slstm" else slice(None)
                for k in range(len(lengths)):
                    ref = [t.double() for t in (Wx[cu[k]:cu[k + 1]].unsqueeze(0), R, b)]
                    init = s0[:, k:k + 1].unsqueeze(2).double() if initial else None
                    ref_states, ref_last = flashrnn(*ref, init, function=cell, backend="vanilla")
                    torch.testing.assert_close(states[h, cu[k]:cu[k + 1]].double(), ref_states[h, 0],
                                               rtol=tol, atol=tol)
                    torch.testing.assert_close(last[h, k].double(), ref_last[h, 0, 0], rtol=tol, atol=tol)


    def test_language_model_with_cu_seqlens_equals_each_sequence_alone(self):
        import flashtrain.nn as fnn
        torch.manual_seed(0)
        lengths = [100, 3, 57, 1, 64]
        cu = torch.tensor([0] + lengths).cumsum(0)
        model = fnn.LanguageModel(64, 128, ["lstm", "slstm", "linear_scan", "transformer", "gru"],
                                  num_heads=2).cuda()
        tokens = torch.randint(0, 64, (sum(lengths),), device="cuda")
        with torch.no_grad():
            logits = model(tokens, cu_seqlens=cu)
            for k in range(len(lengths)):
                alone = model(tokens[cu[k]:cu[k + 1]].unsqueeze(0))[0]
                torch.testing.assert_close(logits[cu[k]:cu[k + 1]], alone, rtol=1e-4, atol=1e-4)


@unittest.skipUnless(CUDA, "no CUDA device")
class ScanGpuTest(unittest.TestCase):
    def test_against_float64(self):
        for dtype, T, layout in itertools.product(TOLERANCE, (1, 3, 1000, 4096), ("bdt", "btd")):
            with self.subTest(dtype=dtype, T=T, layout=layout):
                shape = (4, 96, T) if layout == "bdt" else (4, T, 96)
                a = torch.rand(shape, device="cuda").mul(0.2).add(0.8)
                b = torch.randn(shape, device="cuda")
                x0 = torch.randn(4, 96, device="cuda")
                x, last = scan(a.to(dtype), b.to(dtype), x0=x0.to(dtype), layout=layout, return_last=True)
                ref, ref_last = scan(a.to(dtype).double(), b.to(dtype).double(), x0=x0.to(dtype).double(), layout=layout,
                                     return_last=True)
                tol = TOLERANCE[dtype] * 10
                torch.testing.assert_close(x.double(), ref, rtol=tol, atol=tol)
                torch.testing.assert_close(last.double(), ref_last, rtol=tol, atol=tol)


class TinyLstmLm(torch.nn.Module):
    def __init__(self, vocab=64, heads=2, head_dim=32):
        super().__init__()
        width = heads * head_dim
        self.heads, self.head_dim = heads, head_dim
        self.embed = torch.nn.Embedding(vocab, width)
        self.proj = torch.nn.Linear(width, 4 * width)
        self.R = torch.nn.Parameter(torch.randn(4, heads, head_dim, head_dim) / head_dim ** 0.5)
        self.b = torch.nn.Parameter(torch.zeros(4, heads, head_dim))
        self.out = torch.nn.Linear(width, vocab)

    def forward(self, tokens):
        B, T = tokens.shape
        Wx = self.proj(self.embed(tokens)).view(B, T, 4, self.heads, self.head_dim)
        states, _ = flashrnn(Wx, self.R, self.b, function="lstm")
        return self.out(states[0].reshape(B, T, -1))


@unittest.skipUnless(CUDA, "no CUDA device")
class CompileAndGraphTest(unittest.TestCase):
    def test_compile_fullgraph_inductor_lstm_lm(self):
        torch.manual_seed(0)
        model = TinyLstmLm().cuda()
        tokens = torch.randint(0, 64, (4, 32), device="cuda")

        def loss_fn(m):
            logits = m(tokens)
            return torch.nn.functional.cross_entropy(logits.flatten(0, 1), tokens.flatten())

        eager = loss_fn(model)
        eager_grads = torch.autograd.grad(eager, list(model.parameters()))
        compiled = torch.compile(model, fullgraph=True)
        loss = loss_fn(compiled)
        grads = torch.autograd.grad(loss, list(model.parameters()))
        torch.testing.assert_close(loss, eager, rtol=1e-4, atol=1e-4)
        for g, e in zip(grads, eager_grads):
            torch.testing.assert_close(g, e, rtol=1e-3, atol=1e-3)

    def test_cuda_graph_capture_forward_and_backward(self):
        for backend in ("fused", "alternating"):
            with self.subTest(backend=backend):
                Wx, R, b = inputs("lstm", 8, 64, 2, 64, torch.bfloat16)
                static = [t.detach().clone().requires_grad_() for t in (Wx, R, b)]

                def step():
                    states, last = flashrnn(*static, backend=backend)
                    (states.float().square().sum() + last.float().sum()).backward()
                    return states

                stream = torch.cuda.Stream()
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    for _ in range(2):  # warm-up outside capture
                        for t in static:
                            t.grad = None
                        step()
                torch.cuda.current_stream().wait_stream(stream)
                graph = torch.cuda.CUDAGraph()
                for t in static:
                    t.grad = None
                with torch.cuda.graph(graph):
                    captured = step()
                with torch.no_grad():
                    for s, t in zip(static, (Wx, R, b)):
                        s.copy_(t * 0.5)
                graph.replay()
                torch.cuda.synchronize()
                fresh = [(t * 0.5).detach().requires_grad_() for t in (Wx, R, b)]
                expected, last = flashrnn(*fresh, backend=backend)
                (expected.float().square().sum() + last.float().sum()).backward()
                torch.testing.assert_close(captured, expected)
                torch.testing.assert_close(static[0].grad, fresh[0].grad, rtol=2e-2, atol=2e-2)


@unittest.skipUnless(CUDA, "no CUDA device")
class NnGpuTest(unittest.TestCase):
    """flashtrain.nn on the GPU: every dtype against the float64 CPU run of the
    same weights, torch.compile, CUDA-graph capture, packed = padded then masked."""

    def test_every_dtype_against_float64(self):
        for kind, dtype, H in itertools.product(("LSTM", "GRU", "RNN"), TOLERANCE, (64, 256)):
            with self.subTest(kind=kind, dtype=dtype, H=H):
                torch.manual_seed(0)
                reference = getattr(flashtrain.nn, kind)(16, H, num_layers=2, bidirectional=True, batch_first=True,
                                                         dtype=torch.float64)
                module = getattr(flashtrain.nn, kind)(16, H, num_layers=2, bidirectional=True, batch_first=True,
                                                      device="cuda", dtype=dtype)
                module.load_state_dict(reference.state_dict())
                x = torch.randn(4, 40, 16, dtype=torch.float64)
                expected, _ = reference(x)
                got, _ = module(x.to("cuda", dtype))
                scale = TOLERANCE[dtype] * 2  # two layers
                torch.testing.assert_close(got.double().cpu(), expected, rtol=scale, atol=scale)

    def test_compile_fullgraph_two_layer_bidirectional(self):
        torch.manual_seed(0)
        lstm = flashtrain.nn.LSTM(32, 64, num_layers=2, bidirectional=True, batch_first=True,
                                  device="cuda", dtype=torch.bfloat16)
        x = torch.randn(4, 48, 32, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        eager_out, (h, c) = lstm(x)
        eager_grad, = torch.autograd.grad(eager_out.float().square().sum(), x)
        compiled = torch.compile(lstm, fullgraph=True)
        out, (h2, c2) = compiled(x)
        grad, = torch.autograd.grad(out.float().square().sum(), x)
        torch.testing.assert_close(out, eager_out, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(c2, c, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(grad, eager_grad, rtol=5e-2, atol=5e-2)

    def test_cuda_graph_capture(self):
        torch.manual_seed(0)
        lstm = flashtrain.nn.LSTM(32, 64, num_layers=2, batch_first=True, device="cuda", dtype=torch.bfloat16)
        static_x = torch.randn(8, 64, 32, device="cuda", dtype=torch.bfloat16)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):
                lstm(static_x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured, (h_n, _) = lstm(static_x)
        fresh = torch.randn_like(static_x)
        static_x.copy_(fresh)
        graph.replay()
        torch.cuda.synchronize()
        expected, (h_expected, _) = lstm(fresh)
        torch.testing.assert_close(captured, expected)
        torch.testing.assert_close(h_n, h_expected)

    def test_packed_equals_padded_then_masked(self):
        from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
        lengths = torch.tensor([50, 7, 33, 64])
        for kind in ("LSTM", "GRU", "RNN"):
            with self.subTest(kind=kind):
                torch.manual_seed(0)
                module = getattr(flashtrain.nn, kind)(16, 128, num_layers=2, bidirectional=True, batch_first=True,
                                                      device="cuda", dtype=torch.bfloat16)
                x = torch.randn(4, 64, 16, device="cuda", dtype=torch.bfloat16)
                packed_out, packed_state = module(pack_padded_sequence(x, lengths, batch_first=True,
                                                                       enforce_sorted=False))
                padded, _ = pad_packed_sequence(packed_out, batch_first=True)
                out, state = module(x, lengths=lengths)
                torch.testing.assert_close(padded, out, rtol=0, atol=0)
                for a, b in zip(packed_state if kind == "LSTM" else (packed_state,),
                                state if kind == "LSTM" else (state,)):
                    torch.testing.assert_close(a, b, rtol=0, atol=0)
                # Each sequence alone, unpadded: the same numbers up to the dtype's rounding.
                for row, length in enumerate(lengths.tolist()):
                    alone, _ = module(x[row:row + 1, :length])
                    torch.testing.assert_close(alone[0], out[row, :length], rtol=2e-2, atol=2e-2)

    def test_variable_lengths_never_wait_for_the_gpu(self):
        # The layout is placed on the host and copied asynchronously: a packed call,
        # a lengths= call and flashrnn_varlen with cu_seqlens on the CPU queue their
        # work without synchronising (torch raises on any synchronising call here).
        from torch.nn.utils.rnn import pack_padded_sequence
        lstm = flashtrain.nn.LSTM(16, 64, bidirectional=True, batch_first=True, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(3, 20, 16, device="cuda", dtype=torch.bfloat16)
        lengths = torch.tensor([20, 5, 12])
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        Wx = torch.randn(37, 4, 1, 64, device="cuda", dtype=torch.bfloat16)
        R = torch.randn(4, 1, 64, 64, device="cuda", dtype=torch.bfloat16) * 0.1
        b = torch.zeros(4, 1, 64, device="cuda", dtype=torch.bfloat16)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            lstm(packed)
            lstm(x, lengths=lengths)
            flashtrain.flashrnn_varlen(Wx, R, b, torch.tensor([0, 20, 25, 37]))
        finally:
            torch.cuda.set_sync_debug_mode("default")

    def test_capturing_a_packed_call_is_refused_by_name(self):
        from torch.nn.utils.rnn import pack_padded_sequence
        lstm = flashtrain.nn.LSTM(16, 64, batch_first=True, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(2, 10, 16, device="cuda", dtype=torch.bfloat16)
        packed = pack_padded_sequence(x, torch.tensor([10, 4]), batch_first=True)
        lstm(packed)
        graph = torch.cuda.CUDAGraph()
        with self.assertRaisesRegex(RuntimeError, "cannot be captured in a CUDA graph"):
            with torch.cuda.graph(graph):
                lstm(packed)


@unittest.skipUnless(CUDA, "no CUDA device")
class ImportTimeGpuTest(unittest.TestCase):
    def test_import_and_first_call_compile_nothing(self):
        code = ("import time, torch; torch.cuda.init(); t = time.perf_counter(); "
                "import flashtrain; i = time.perf_counter() - t; "
                "Wx = torch.randn(2, 3, 4, 1, 64, device='cuda', dtype=torch.bfloat16); "
                "R = torch.randn(4, 1, 64, 64, device='cuda', dtype=torch.bfloat16); "
                "b = torch.zeros(4, 1, 64, device='cuda', dtype=torch.bfloat16); "
                "t = time.perf_counter(); flashtrain.flashrnn(Wx, R, b); torch.cuda.synchronize(); "
                "print(i, time.perf_counter() - t)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=os.environ, check=True)
        import_s, first_call_s = map(float, out.stdout.split()[-2:])
        self.assertLess(import_s, 1.0)
        self.assertLess(first_call_s, 5.0)  # no JIT compile (FlashRNN's first call takes minutes)


if __name__ == "__main__":
    unittest.main()
