"""flashtrain's model modules in PyTorch: the layers, mixers and blocks of the
C++ models (models/README.md), their math and their initialisation, which
load_export fills from an export and flashtrain.nn offers for building.

Every mixer and block is forward(x [B, T, d], state=None) -> (y, state): the
state carries what a later chunk needs (cell states, the convolution's window,
the scan state, the KV cache), so a sequence fed in chunks gives the outputs of
feeding it whole. With segments= (sequences laid back to back, _varlen.Segments)
x is [total, d] and the state has one row per sequence: no state, window or scan
crosses from one sequence into the next. The recurrent mixers run on flashtrain.flashrnn (CPU tensors
run the vanilla backend), the linear scan on flashtrain.scan. The defaults of
the initialisation (forget-gate biases, recurrent scales, timescales, the
feed-forward's width) are read from the extension, which compiles the C++
models' own (models/option_defaults.h).
"""
import json
import math
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ._recurrent import flashrnn
from ._scan import scan
from ._varlen import Segments

DEFAULTS = json.loads(torch.ops.flashtrain.model_defaults())
# The block kinds, from the C++ models' one list (models/block_kind.h): every kind, the
# recurrent ones (they run the op's cell of the same name) and those a plain model stacks.
_BLOCK_TABLE = json.loads(torch.ops.flashtrain.block_kinds())
BLOCK_KINDS = tuple(row["name"] for row in _BLOCK_TABLE)
RECURRENT_KINDS = tuple(row["name"] for row in _BLOCK_TABLE if row["cell"])
PLAIN_KINDS = tuple(row["name"] for row in _BLOCK_TABLE if row["plain"])
# The op's gates G, bias slots Gb and states S per cell (docs/CELLS.md), from the op.
CELLS = {cell: tuple(torch.ops.flashtrain.cell_layout(cell)[:3])
         for cell in (row["cell"] for row in _BLOCK_TABLE) if cell}


# --- initialisation (models/src/init.h) -----------------------------------------------------

@torch.no_grad()
def _small_(w, dim):
    """"Small init" (Nguyen & Salazar 2019): N(0, 2 / (5 dim)). Input projections."""
    w.normal_(0.0, math.sqrt(2.0 / (5.0 * dim)))


@torch.no_grad()
def _by_depth_(w, dim, num_blocks):
    """"Wang init": N(0, (2 / (num_blocks sqrt(dim)))^2), for what writes into the residual stream."""
    w.normal_(0.0, 2.0 / (num_blocks * math.sqrt(dim)))


@torch.no_grad()
def _uniform_(w, bound):
    """U(-bound, bound); bound 0 gives zeros."""
    if bound == 0:
        w.zero_()
    else:
        w.uniform_(-bound, bound)


@torch.no_grad()
def _spaced_gate_bias_(b, slot, low, high):
    """b[slot] ([N, D]) spaced evenly over [low, high] along D, alike in every head."""
    b[slot].copy_(torch.linspace(low, high, b.shape[2], dtype=b.dtype).expand_as(b[slot]))


def ffn_hidden(dim, factor=DEFAULTS["ffn_factor"], multiple_of=DEFAULTS["ffn_multiple_of"]):
    """The feed-forward's hidden width: factor x dim rounded up to a multiple of multiple_of."""
    return int(math.ceil(factor * dim / multiple_of)) * multiple_of


def _shape(t) -> List[int]:
    return list(t.shape)


# --- layers -------------------------------------------------------------------------------

class _Weight(nn.Module):
    """A module holding one parameter named `weight` (norms, head-wise projections)."""

    def __init__(self, shape: Sequence[int]):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(*shape))


class _Norm(_Weight):
    """A norm over the last axis: a weight of dim ones, and eps."""

    def __init__(self, dim: int, eps: float):
        super().__init__((dim,))
        self.eps = eps
        nn.init.ones_(self.weight)


class LayerNorm(_Norm):
    """LayerNorm over the last axis with a weight and no bias (xLSTM)."""

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, None, self.eps)


class RMSNorm(_Norm):
    """RMSNorm over the last axis (Llama): x / sqrt(mean(x^2) + eps) * weight."""

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class HeadwiseLinear(_Weight):
    """Per-head linear map: x [..., N*I], weight [N, O, I] -> [..., N*O] (block-diagonal)."""

    def __init__(self, heads: int, out_per_head: int, in_per_head: int):
        super().__init__((heads, out_per_head, in_per_head))

    def forward(self, x):
        heads, _, per_head = self.weight.shape
        y = torch.einsum("...ni,noi->...no", x.unflatten(-1, (heads, per_head)), self.weight)
        return y.flatten(-2)


class FeedForward(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, dim: int, hidden: int, num_blocks: int = 1):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        _small_(self.gate.weight, dim)
        _small_(self.up.weight, dim)
        _by_depth_(self.down.weight, dim, num_blocks)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


# --- mixers: forward(x [B, T, d], state or None) -> (y [B, T, d'], new state) --------------

class RecurrentMixer(nn.Module):
    """lstm / gru / elman: Wx = wx(x) -> the op with r, b -> h over the heads -> out_proj
    (no out_proj in a plain model). State: {"states": [S, B, 1, N, D]}, O(1)."""

    def __init__(self, kind, dim, heads, head_dim, block_diagonal, plain, backend, num_blocks=1,
                 retain_bias=(DEFAULTS["retain_bias_min"], DEFAULTS["retain_bias_max"]),
                 recurrent_init_scale=DEFAULTS["recurrent_init_scale"]):
        super().__init__()
        gates, bias_slots, _ = CELLS[kind]
        self.kind, self.heads, self.head_dim, self.gates = kind, heads, head_dim, gates
        self.backend = backend
        if block_diagonal:
            self.wx = HeadwiseLinear(heads, gates * head_dim, dim // heads)
        else:
            self.wx = nn.Linear(dim, gates * heads * head_dim, bias=False)
        self.r = nn.Parameter(torch.empty(gates, heads, head_dim, head_dim))
        self.b = nn.Parameter(torch.zeros(bias_slots, heads, head_dim))
        self.out_proj = None if plain else nn.Linear(heads * head_dim, dim, bias=False)
        # The trainer's initialisation (models/src/recurrent_mixer.cpp).
        _small_(self.wx.weight, dim)
        _uniform_(self.r, recurrent_init_scale / math.sqrt(head_dim))
        if kind in ("lstm", "gru"):  # the gate that keeps the state: LSTM's f, GRU's z
            _spaced_gate_bias_(self.b, 1, *retain_bias)
        if self.out_proj is not None:
            _by_depth_(self.out_proj.weight, dim, num_blocks)

    def gate_inputs(self, x):
        batch, steps = x.shape[:2]
        y = self.wx(x)
        if isinstance(self.wx, HeadwiseLinear):  # grouped by head: [B, T, N, G, D]
            return y.view(batch, steps, self.heads, self.gates, self.head_dim).transpose(2, 3)
        return y.view(batch, steps, self.gates, self.heads, self.head_dim)  # rows (gate, head, unit)

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        initial = None if state is None else state["states"]
        if segments is None:
            states, last = flashrnn(self.gate_inputs(x).contiguous(), self.r, self.b, states=initial,
                                    function=self.kind, backend=self.backend)
        else:  # x [total, d]; states [S, n, 1, N, D] one row per sequence
            states, last = segments.flashrnn(self.gate_inputs(x.unsqueeze(0))[0].contiguous(), self.r, self.b,
                                             None if initial is None else initial[:, :, 0], h_only=True,
                                             function=self.kind, backend=self.backend)
            last = last.unsqueeze(2)
        h = states[0].flatten(-2)  # [B, T, N*D] or [total, N*D]
        y = h if self.out_proj is None else self.out_proj(h)
        return y, {"states": last}


class SlstmMixer(nn.Module):
    """xLSTM's sLSTM layer: causal depthwise conv + SiLU feeding the i and f gates, z and o
    from the input, head-wise gate projections, the sLSTM op, per-head LayerNorm.
    State: {"states": [4, B, 1, N, D], "conv_window": [B, K-1, d]} (the last K-1 inputs), O(1)."""

    def __init__(self, dim, heads, head_dim, conv_kernel, eps, backend, num_blocks=1,
                 forget_bias=(DEFAULTS["slstm_forget_bias_min"], DEFAULTS["slstm_forget_bias_max"]),
                 recurrent_init_scale=DEFAULTS["slstm_recurrent_init_scale"]):
        super().__init__()
        self.heads, self.head_dim, self.eps, self.backend = heads, head_dim, eps, backend
        self.conv_kernel = conv_kernel
        if conv_kernel > 0:
            self.conv = nn.Conv1d(dim, dim, conv_kernel, groups=dim, bias=True)
        else:
            self.conv = None
        per_head = dim // heads
        self.igate = HeadwiseLinear(heads, head_dim, per_head)
        self.fgate = HeadwiseLinear(heads, head_dim, per_head)
        self.zgate = HeadwiseLinear(heads, head_dim, per_head)
        self.ogate = HeadwiseLinear(heads, head_dim, per_head)
        self.r = nn.Parameter(torch.empty(4, heads, head_dim, head_dim))
        self.b = nn.Parameter(torch.zeros(4, heads, head_dim))
        self.group_norm = _Weight((heads * head_dim,))
        # The trainer's initialisation (models/src/slstm_mixer.cpp): xLSTM's.
        if self.conv is not None:
            bound = 1.0 / math.sqrt(conv_kernel)  # nn.Conv1d's, fan_in = K
            _uniform_(self.conv.weight, bound)
            _uniform_(self.conv.bias, bound)
        for gate in (self.igate, self.fgate, self.zgate, self.ogate):
            _small_(gate.weight, dim)
        _uniform_(self.r, recurrent_init_scale / math.sqrt(head_dim))
        _spaced_gate_bias_(self.b, 1, *forget_bias)  # gates i, f, z, o
        nn.init.ones_(self.group_norm.weight)

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        new_state = {}
        x_conv = x
        if self.conv is not None:
            window = None if state is None else state["conv_window"]
            if segments is None:
                x_conv, new_state["conv_window"] = self._conv(x, window)
            else:
                x_conv, new_state["conv_window"] = self._conv_segments(x, window, segments)
        shape = x.shape[:-1] + (self.heads, self.head_dim)
        gate_dim = x.dim() - 1  # [B, T, 4, N, D] or [total, 4, N, D]
        wx = torch.stack([self.igate(x_conv).view(shape), self.fgate(x_conv).view(shape),
                          self.zgate(x).view(shape), self.ogate(x).view(shape)], dim=gate_dim)
        initial = None if state is None else state["states"]
        if segments is None:
            states, last = flashrnn(wx.contiguous(), self.r, self.b, states=initial,
                                    function="slstm", backend=self.backend)
        else:
            states, last = segments.flashrnn(wx.contiguous(), self.r, self.b,
                                             None if initial is None else initial[:, :, 0], h_only=True,
                                             function="slstm", backend=self.backend)
            last = last.unsqueeze(2)
        h = states[0]  # [B, T, N, D] or [total, N, D]
        normed = F.layer_norm(h, (self.head_dim,), None, None, self.eps)  # per head
        new_state["states"] = last
        return normed.flatten(-2) * self.group_norm.weight, new_state

    def _conv(self, x, window):
        """The causal depthwise conv + SiLU over x [B, T, d] after window [B, K-1, d]
        (zeros: the start) -> (x_conv, the window after x)."""
        kernel = self.conv_kernel
        if window is None:
            window = x.new_zeros(x.shape[0], kernel - 1, x.shape[2])
        padded = torch.cat([window, x], dim=1)  # [B, K-1+T, d]: zeros before the start
        conv = F.conv1d(padded.transpose(1, 2), self.conv.weight, self.conv.bias, groups=x.shape[2])
        return F.silu(conv.transpose(1, 2)), padded[:, padded.shape[1] - (kernel - 1):]

    def _conv_segments(self, x, window, segments: Segments):
        """The same over sequences back to back, x [total, d], window [n, K-1, d]: each
        sequence's window goes before it, and one conv runs over all of them, so no
        tap reaches into another sequence."""
        before = self.conv_kernel - 1
        n, d = segments.count, x.shape[1]
        # sequence k's stretch starts at first[k] + k * (K-1): its window, then its tokens
        stretch = segments.first + torch.arange(n, device=x.device) * before
        token_at = torch.arange(x.shape[0], device=x.device) + (segments.sequence + 1) * before
        window_at = (stretch.unsqueeze(1) + torch.arange(before, device=x.device)).flatten()
        padded = x.new_zeros(x.shape[0] + n * before, d).index_copy(0, token_at, x)
        if window is not None:
            padded = padded.index_copy(0, window_at, window.reshape(n * before, d))
        conv = F.conv1d(padded.t().unsqueeze(0), self.conv.weight, self.conv.bias, groups=d)[0].t()
        after = (stretch + segments.lengths).unsqueeze(1) + torch.arange(before, device=x.device)
        return F.silu(conv.index_select(0, token_at - before)), padded[after.flatten()].view(n, before, d)


class LinearScanMixer(nn.Module):
    """[a~, v, g] = in_proj(x), a = sigmoid(a~ + gate_bias), x_t = a_t x_{t-1} + (1 - a_t) v_t
    (flashtrain.scan), out_proj(x_t * silu(g_t)). State: {"x": [B, H]}, O(1)."""

    def __init__(self, dim, hidden, backend, num_blocks=1,
                 timescales=(DEFAULTS["scan_min_timescale"], DEFAULTS["scan_max_timescale"])):
        super().__init__()
        # a = sigmoid(gate_bias) = 1 - 1/tau, tau log-spaced (models/src/linear_scan_mixer.cpp)
        tau = torch.logspace(math.log10(timescales[0]), math.log10(timescales[1]), hidden)
        self.gate_bias = nn.Parameter(torch.log(tau - 1.0))
        self.in_proj = nn.Linear(dim, 3 * hidden, bias=False)
        self.out_proj = nn.Linear(hidden, dim, bias=False)
        self.backend = "vanilla" if backend == "vanilla" else "auto"
        _small_(self.in_proj.weight, dim)
        _by_depth_(self.out_proj.weight, dim, num_blocks)

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        a_pre, v, gate = self.in_proj(x).chunk(3, dim=-1)
        a = torch.sigmoid(a_pre + self.gate_bias)
        x0 = None if state is None else state["x"]
        if segments is None:
            xs, last = scan(a.contiguous(), ((1.0 - a) * v).contiguous(), x0=x0, layout="btd",
                            backend=self.backend, return_last=True)
            return self.out_proj(xs * F.silu(gate)), {"x": last}
        # One scan over the sequences back to back, each first step cut from the one
        # before (its gate 0) and fed its own x0 instead: x_1 = a_1 x0 + (1 - a_1) v_1.
        inputs = (1.0 - a) * v
        if x0 is not None:
            inputs = inputs.index_add(0, segments.first, a.index_select(0, segments.first) * x0)
        cut = torch.ones(x.shape[0], 1, dtype=a.dtype, device=a.device).index_fill(0, segments.first, 0)
        xs = scan((a * cut).unsqueeze(0).contiguous(), inputs.unsqueeze(0).contiguous(), layout="btd",
                  backend=self.backend)[0]
        return self.out_proj(xs * F.silu(gate)), {"x": xs.index_select(0, segments.last)}


def _rotary(x, positions, theta):
    """Half-split (GPT-NeoX) rotary: x [B, T, H, hd] at absolute positions [T]."""
    dim = x.shape[-1]
    half = dim // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64, device=x.device) / dim)
    angles = positions.to(torch.float64)[:, None] * inv  # float64, then x's dtype
    cos = torch.cos(angles).to(x.dtype)[None, :, None, :]
    sin = torch.sin(angles).to(x.dtype)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class AttentionMixer(nn.Module):
    """Llama attention: wq, wk, wv, wo without biases, rotary positions, causal softmax
    attention. State: the KV cache {"keys", "values": [B, H, tokens so far, hd]}, which
    grows with the sequence (not O(1))."""

    def __init__(self, dim, heads, theta, num_blocks=1):
        super().__init__()
        self.heads, self.theta = heads, theta
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        for w in (self.wq, self.wk, self.wv):
            _small_(w.weight, dim)
        _by_depth_(self.wo.weight, dim, num_blocks)

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        if segments is not None:
            return self._forward_segments(x, state, segments)
        batch, steps, dim = x.shape
        shape = (batch, steps, self.heads, dim // self.heads)
        past = 0 if state is None else state["keys"].shape[2]
        positions = torch.arange(past, past + steps, device=x.device)
        q = _rotary(self.wq(x).view(shape), positions, self.theta).transpose(1, 2)
        k = _rotary(self.wk(x).view(shape), positions, self.theta).transpose(1, 2)
        v = self.wv(x).view(shape).transpose(1, 2)  # [B, H, T, hd]
        if state is not None:
            k = torch.cat([state["keys"], k], dim=2)
            v = torch.cat([state["values"], v], dim=2)
        # query i (position past + i) sees keys 0 .. past + i
        mask = torch.ones(steps, past + steps, dtype=torch.bool, device=x.device).tril(past)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        y = self.wo(attended.transpose(1, 2).reshape(batch, steps, dim))
        return y, {"keys": k, "values": v}

    def _forward_segments(self, x, state, segments: Segments):
        """Sequences back to back, x [total, d], each from its start: a token attends to
        the tokens of its own sequence up to itself, rotary positions count within it.
        No KV cache comes in or goes out (a cache per sequence would be ragged)."""
        if state is not None:
            raise ValueError("AttentionMixer: with cu_seqlens every sequence starts afresh: no state "
                             "(KV cache) is taken")
        steps, dim = x.shape
        shape = (1, steps, self.heads, dim // self.heads)
        q = _rotary(self.wq(x).view(shape), segments.position, self.theta).transpose(1, 2)
        k = _rotary(self.wk(x).view(shape), segments.position, self.theta).transpose(1, 2)
        v = self.wv(x).view(shape).transpose(1, 2)
        same = segments.sequence.unsqueeze(1) == segments.sequence.unsqueeze(0)
        mask = same & torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril()
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(attended.transpose(1, 2).reshape(steps, dim)), None


def _clock(device) -> float:
    """Seconds on a monotonic clock once the device has finished its queued work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


# --- blocks and the model ------------------------------------------------------------------

class Block(nn.Module):
    """Pre-norm residual block: h = x + mixer(mixer_norm(x)); y = h + ffn(ffn_norm(h))."""

    def __init__(self, kind, mixer, dim, eps, ffn_hidden, num_blocks=1):
        super().__init__()
        norm = RMSNorm if kind == "transformer" else LayerNorm
        self.kind = kind
        self.mixer_norm = norm(dim, eps)
        self.mixer = mixer
        if ffn_hidden:
            self.ffn_norm = norm(dim, eps)
            self.ffn = FeedForward(dim, ffn_hidden, num_blocks)
        else:
            self.ffn_norm = self.ffn = None

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        y, state = self.mixer(self.mixer_norm(x), state, segments)
        x = x + y
        if self.ffn is not None:
            x = x + self.ffn(self.ffn_norm(x))
        return x, state


class PlainLayer(nn.Module):
    """A bare recurrent layer of a plain model: x_l = h of the cell over x_{l-1}."""

    def __init__(self, mixer):
        super().__init__()
        self.mixer = mixer

    def forward(self, x, state=None, segments: Optional[Segments] = None):
        return self.mixer(x, state, segments)


@dataclass
class GenerationState:
    """What generation carries between calls: per block a dict of tensors (see the
    mixers), and the number of tokens seen so far."""
    blocks: List[Optional[Dict[str, torch.Tensor]]] = field(default_factory=list)
    position: int = 0


class FlashtrainLM(nn.Module):
    """A flashtrain language model (models/README.md) loaded from a `flashtrain export`.

    forward(tokens [B, T]) -> logits [B, T, vocab]. forward_with_state(tokens, state) runs a
    chunk of tokens from a GenerationState (None: the start) and returns the logits and the
    new state; generate() uses it. Build it with load_export().
    """

    def __init__(self, config: dict, layout: dict, backend: str = "auto"):
        super().__init__()
        self.config = config
        self.structure = config.get("structure", "residual")
        self.kinds = list(config["blocks"])
        dim, heads, head_dim = config["d_model"], config["n_heads"], config["head_dim"]
        eps = float(config["norm_eps"])
        self.embedding = nn.Embedding(config["vocab_size"], dim)
        _small_(self.embedding.weight, dim)
        n = len(self.kinds)
        blocks = []
        for index, kind in enumerate(self.kinds):
            part = layout[index]
            if self.plain:
                blocks.append(PlainLayer(RecurrentMixer(kind, dim, heads, head_dim,
                                                        part["block_diagonal"], True, backend, n)))
                continue
            if kind == "slstm":
                mixer = SlstmMixer(dim, heads, head_dim, part["conv_kernel"], eps, backend, n)
            elif kind == "linear_scan":
                mixer = LinearScanMixer(dim, part["scan_width"], backend, n)
            elif kind == "transformer":
                mixer = AttentionMixer(dim, heads, float(config["rope_theta"]), n)
            else:
                mixer = RecurrentMixer(kind, dim, heads, head_dim, part["block_diagonal"], False,
                                       backend, n)
            blocks.append(Block(kind, mixer, dim, eps, part["ffn_hidden"], n))
        self.blocks = nn.ModuleList(blocks)
        if self.plain:
            self.final_norm = None
        else:
            last = self.kinds[-1]
            self.final_norm = RMSNorm(dim, eps) if last == "transformer" else LayerNorm(dim, eps)
        self.tie_embeddings = bool(config["tie_embeddings"])
        self.head = None if self.tie_embeddings else nn.Linear(dim, config["vocab_size"], bias=False)
        if self.head is not None:
            _small_(self.head.weight, dim)

    @property
    def plain(self) -> bool:
        return self.structure == "plain"

    @property
    def vocab_size(self) -> int:
        return self.embedding.weight.shape[0]

    def _check_tokens(self, tokens):
        if not isinstance(tokens, torch.Tensor):
            tokens = torch.as_tensor(tokens)
        if tokens.dim() != 2 or tokens.shape[1] < 1 or tokens.is_floating_point() \
                or tokens.is_complex() or tokens.dtype == torch.bool:
            raise ValueError(f"tokens must be integers [batch, time >= 1], got {tokens.dtype} "
                             f"{_shape(tokens)}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got {low}..{high}")
        return tokens.to(device=self.embedding.weight.device, dtype=torch.long)

    def forward_with_state(self, tokens, state: Optional[GenerationState] = None
                           ) -> Tuple[torch.Tensor, GenerationState]:
        """tokens [B, T] after `state` (None: from the start) -> (logits [B, T, vocab],
        the state after them). Chunks of any length: feeding a sequence in pieces gives
        the logits of feeding it whole."""
        tokens = self._check_tokens(tokens)
        x = self.embedding(tokens)
        previous = state.blocks if state is not None else [None] * len(self.blocks)
        new_blocks = []
        for block, block_state in zip(self.blocks, previous):
            x, block_state = block(x, block_state)
            new_blocks.append(block_state)
        if self.final_norm is not None:
            x = self.final_norm(x)
        head = self.embedding.weight if self.head is None else self.head.weight
        position = (0 if state is None else state.position) + tokens.shape[1]
        return F.linear(x, head), GenerationState(new_blocks, position)

    def forward(self, tokens, cu_seqlens=None) -> torch.Tensor:
        """tokens [B, T] integers -> logits [B, T, vocab]; with cu_seqlens (int [n + 1],
        0, ..., total) tokens [total] are n sequences back to back, each from the start
        (no state crosses into the next) -> logits [total, vocab]."""
        if cu_seqlens is None:
            return self.forward_with_state(tokens)[0]
        tokens = self._check_tokens(torch.as_tensor(tokens).unsqueeze(0))[0]
        segments = Segments.of(cu_seqlens, tokens.shape[0], tokens.device, type(self).__name__)
        x = self.embedding(tokens)
        for block in self.blocks:
            x, _ = block(x, None, segments)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return F.linear(x, self.embedding.weight if self.head is None else self.head.weight)

    @torch.no_grad()
    def generate(self, prompt_tokens, max_new_tokens: int, temperature: float = 0.0,
                 seed: Optional[int] = None, stop_token: Optional[int] = None,
                 return_logits: bool = False):
        """Continue prompt_tokens ([T], [B, T] or a list of ints) by max_new_tokens tokens.

        The prompt is fed once; then one token at a time, carrying each block's state:
        lstm / gru / elman their cell states [S, B, 1, N, D], slstm its cell states and the
        causal conv's last K-1 inputs, linear_scan its last scan state [B, H] — fixed size,
        O(1) per token — and transformer blocks a KV cache that grows with the sequence.
        temperature 0 picks the argmax (greedy), else samples softmax(logits / temperature)
        (seed: a torch.Generator seeded with it; None: torch's global generator).
        stop_token: a row stops after producing it (later positions of a stopped row hold
        stop_token); generation ends when every row has stopped.
        Returns the tokens [B, T + new] (a 1-D prompt gives [T + new]) and, with
        return_logits, also the logits each new token was chosen from [B, new, vocab].
        Afterwards `generation_stats` holds the prompt's and the new tokens' counts (per
        row), the seconds of the prefill and of the decode, and their tokens per second
        (all rows; the GPU synchronised before each clock reading).
        """
        prompt = torch.as_tensor(prompt_tokens)
        one_row = prompt.dim() == 1
        if one_row:
            prompt = prompt[None]
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        prompt = self._check_tokens(prompt)
        generator = None
        if seed is not None and temperature > 0:
            generator = torch.Generator(device=prompt.device).manual_seed(int(seed))
        out, chosen_logits = [prompt], []
        stopped = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
        started = _clock(prompt.device)
        logits, state = self.forward_with_state(prompt)
        prefilled = _clock(prompt.device)
        for i in range(max_new_tokens):
            last = logits[:, -1]
            if temperature > 0:
                probs = torch.softmax(last.double() / temperature, dim=-1)
                token = torch.multinomial(probs, 1, generator=generator)[:, 0]
            else:
                token = last.argmax(dim=-1)
            if stop_token is not None:
                token = torch.where(stopped, torch.full_like(token, stop_token), token)
                stopped |= token == stop_token
            out.append(token[:, None])
            chosen_logits.append(last)
            if i + 1 == max_new_tokens or (stop_token is not None and bool(stopped.all())):
                break
            logits, state = self.forward_with_state(token[:, None], state)
        decoded = _clock(prompt.device)
        rows, new = prompt.shape[0], len(out) - 1
        self.generation_stats = {
            "prompt_tokens": prompt.shape[1], "new_tokens": new,
            "prefill_seconds": prefilled - started, "decode_seconds": decoded - prefilled,
            "prefill_tokens_per_second": rows * prompt.shape[1] / max(prefilled - started, 1e-9),
            "decode_tokens_per_second": rows * new / max(decoded - prefilled, 1e-9)}
        tokens = torch.cat(out, dim=1)
        if one_row:
            tokens = tokens[0]
        if not return_logits:
            return tokens
        if chosen_logits:
            scores = torch.stack(chosen_logits, dim=1)
        else:
            scores = logits.new_zeros(prompt.shape[0], 0, self.vocab_size)
        return tokens, scores


