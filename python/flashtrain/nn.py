"""torch.nn's recurrent layers on flashtrain's recurrent op: one import to switch;
and the sLSTM layer and the residual blocks of flashtrain's language models.

    from flashtrain.nn import LSTM        # instead of: from torch.nn import LSTM
    lstm = LSTM(input_size, hidden_size, num_layers=2, batch_first=True, bidirectional=True)
    output, (h_n, c_n) = lstm(x)          # or a PackedSequence, or x with lengths=

The constructor, the call, the parameter names and shapes (so torch.nn's state_dict loads
as it is) and the results are torch.nn.LSTM's, GRU's and RNN's; the weights are stored as
torch.nn stores them (gates i, f, g, o for LSTM; r, z, n for GRU) and handed to the op in
its layouts (docs/CELLS.md). Extras: `num_heads` (a block-diagonal recurrence of
`num_heads` heads of hidden_size / num_heads units; 1 is torch.nn's dense one), `backend`
(the op's), and `lengths=` in the call for padded batches. Not supported: LSTM's
`proj_size` and RNN's `nonlinearity="relu"` (the op has no such cells).

    from flashtrain.nn import SLSTM, SLSTMBlock, LSTMBlock
    block = SLSTMBlock(dim=256, num_heads=4)     # xLSTM's sLSTM block, as the trainer builds it
    y, state = block(x)                          # x [B, T, 256]; state carries on
    y_next, state = block(x_next, state)         # the next chunk, as if fed whole

SLSTM (the layer), SLSTMBlock and LSTMBlock / RecurrentBlock (LSTM, GRU, Elman) and
LanguageModel are the modules flashtrain.load_export builds (flashtrain.modules),
initialised as the C++ trainer initialises them.
"""
import math
from typing import List, Optional, Tuple

import torch
from torch.nn.utils.rnn import PackedSequence

from ._recurrent import flashrnn
from ._varlen import Segments, back_to_back, flashrnn_on_layout, layouts_on, place_rows, to_device
from .modules import (BLOCK_KINDS, CELLS, DEFAULTS, PLAIN_KINDS, Block, FlashtrainLM, RecurrentMixer,
                      SlstmMixer, ffn_hidden)

# torch.nn's mode -> the op's cell. Its gates (rows of weight_ih / weight_hh are gates x
# hidden_size, as torch.nn's), bias slots and states (h first) are the op's (CELLS).
_CELLS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "elman"}


def _op_bias(mode: str, b_ih: torch.Tensor, b_hh: torch.Tensor, heads: int) -> torch.Tensor:
    """torch.nn's two bias vectors -> the op's b [Gb, N, D]. GRU keeps n's two
    apart: the reset gate multiplies the recurrent one (docs/CELLS.md)."""
    if mode == "GRU":
        H = b_ih.shape[0] // 3
        b = torch.cat([b_ih[:2 * H] + b_hh[:2 * H], b_ih[2 * H:], b_hh[2 * H:]])
        return b.view(CELLS["gru"][1], heads, H // heads)
    return (b_ih + b_hh).view(CELLS[_CELLS[mode]][1], heads, -1)


def _packed_tokens(packed: PackedSequence) -> Tuple[torch.Tensor, torch.Tensor, List[int]]:
    """Each row of a PackedSequence's data as a token of its sequences (in the
    packed, longest-first order): its sequence and position [total] on the
    data's device, and the sequences' lengths; from batch_sizes [T] (on the
    CPU, non-increasing) with no per-token host work."""
    sizes = packed.batch_sizes
    B, total = int(sizes[0]), packed.data.shape[0]
    # lengths[b] = the steps with more than b sequences: counts of each batch size, summed from the top.
    lengths = torch.bincount(sizes, minlength=B + 1).flip(0).cumsum(0).flip(0)[1:]
    step_start, sizes = to_device([torch.cumsum(sizes, 0) - sizes, sizes], packed.data.device)
    position = torch.arange(sizes.numel(), device=sizes.device).repeat_interleave(sizes, output_size=total)
    sequence = torch.arange(total, device=sizes.device) - step_start.index_select(0, position)
    return sequence, position, lengths.tolist()


class _RNNBase(torch.nn.Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, *, num_heads: int = 1,
                 backend: str = "auto"):
        super().__init__()
        name = type(self).__name__
        for key, value in (("input_size", input_size), ("hidden_size", hidden_size),
                           ("num_layers", num_layers), ("num_heads", num_heads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: {key} must be a positive int, got {value!r}")
        if hidden_size % num_heads != 0:
            raise ValueError(f"{name}: hidden_size {hidden_size} is not a multiple of num_heads {num_heads}")
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"{name}: dropout must be in [0, 1], got {dropout}")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.num_heads, self.backend = num_heads, backend
        self.proj_size = 0
        self._cell = _CELLS[mode]
        gates, _, self._states = CELLS[self._cell]
        directions = 2 if self.bidirectional else 1
        factory = {"device": device, "dtype": dtype}
        head_dim = hidden_size // num_heads
        self._flat_weights_names = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {"weight_ih": (gates * hidden_size, layer_input),
                          # Row g * H + n * D + i reads h[n * D : (n + 1) * D]: torch.nn's
                          # [gates * H, H] when num_heads is 1.
                          "weight_hh": (gates * hidden_size, head_dim)}
                if self.bias:
                    shapes.update(bias_ih=(gates * hidden_size,), bias_hh=(gates * hidden_size,))
                for kind, shape in shapes.items():
                    setattr(self, kind + suffix, torch.nn.Parameter(torch.empty(shape, **factory)))
                    self._flat_weights_names.append(kind + suffix)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch.nn's initialisation: every parameter uniform in ±1/sqrt(hidden_size)."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            torch.nn.init.uniform_(p, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        for key, default in (("num_layers", 1), ("bias", True), ("batch_first", False),
                             ("dropout", 0.0), ("bidirectional", False), ("num_heads", 1),
                             ("backend", "auto")):
            if getattr(self, key) != default:
                text += f", {key}={getattr(self, key)!r}"
        return text

    def flatten_parameters(self) -> None:
        """torch.nn's call to lay the weights out in one buffer for cuDNN; the op reads them
        where they are, so there is nothing to do (kept so that code calling it runs)."""

    @property
    def all_weights(self):
        """torch.nn's: per layer and direction the list [weight_ih, weight_hh(, bias_ih, bias_hh)]."""
        per_direction = 4 if self.bias else 2
        weights = [getattr(self, name) for name in self._flat_weights_names]
        return [weights[i:i + per_direction] for i in range(0, len(weights), per_direction)]

    # -- torch.nn <-> flashtrain ------------------------------------------------

    def _torch_kwargs(self) -> dict:
        return {"num_layers": self.num_layers, "bias": self.bias, "batch_first": self.batch_first,
                "dropout": self.dropout, "bidirectional": self.bidirectional}

    @classmethod
    def from_torch(cls, module: torch.nn.Module, **extras):
        """A copy of a torch.nn module of the same kind, its weights included
        (extras: backend=)."""
        name = cls.__name__
        if type(module).__name__ != name:
            raise TypeError(f"{name}.from_torch: expected a torch.nn.{name}, got {type(module).__name__}")
        if getattr(module, "proj_size", 0):
            raise ValueError(f"{name}.from_torch: proj_size={module.proj_size} is not supported")
        if getattr(module, "nonlinearity", "tanh") != "tanh":
            raise ValueError(f"{name}.from_torch: nonlinearity={module.nonlinearity!r} is not supported (tanh only)")
        weight = module.weight_ih_l0
        ours = cls(module.input_size, module.hidden_size, device=weight.device, dtype=weight.dtype,
                   **{k: getattr(module, k) for k in ("num_layers", "bias", "batch_first", "dropout",
                                                     "bidirectional")}, **extras)
        ours.load_state_dict(module.state_dict())
        return ours.train(module.training)

    def to_torch(self) -> torch.nn.Module:
        """The same layer as a torch.nn module (num_heads must be 1: torch.nn's
        recurrence is dense)."""
        name = type(self).__name__
        if self.num_heads != 1:
            raise ValueError(f"{name}.to_torch: torch.nn has no block-diagonal recurrence "
                             f"(num_heads is {self.num_heads}, not 1)")
        weight = self.weight_ih_l0
        module = getattr(torch.nn, name)(self.input_size, self.hidden_size, device=weight.device,
                                         dtype=weight.dtype, **self._torch_kwargs())
        module.load_state_dict(self.state_dict())
        return module.train(self.training)

    # -- the call ----------------------------------------------------------------

    def _layer_weights(self, layer: int, direction: int):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        w_ih = getattr(self, "weight_ih" + suffix)
        w_hh = getattr(self, "weight_hh" + suffix)
        gates, bias_slots, _ = CELLS[self._cell]
        N = self.num_heads
        D = self.hidden_size // N
        R = w_hh.view(gates, N, D, D)
        if self.bias:
            b = _op_bias(self.mode, getattr(self, "bias_ih" + suffix), getattr(self, "bias_hh" + suffix), N)
        else:
            b = w_ih.new_zeros(bias_slots, N, D)
        return w_ih, R, b

    def _check_input(self, x: torch.Tensor, hx, batch: int):
        name = type(self).__name__
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{name}: input.size(-1) must be input_size = {self.input_size}, "
                             f"got input of shape {tuple(x.shape)}")
        if x.dtype != self.weight_ih_l0.dtype and not torch.is_autocast_enabled(x.device.type):
            raise ValueError(f"{name}: input is {x.dtype} but the parameters are {self.weight_ih_l0.dtype}")
        expected = (self.num_layers * (2 if self.bidirectional else 1), batch, self.hidden_size)
        for i, h in enumerate(hx if isinstance(hx, tuple) else (hx,)):
            if h is not None and tuple(h.shape) != expected:
                what = "hx" if not isinstance(hx, tuple) else ("h_0", "c_0")[i]
                raise ValueError(f"{name}: {what} must be {list(expected)} (num_layers * num_directions, "
                                 f"batch, hidden_size), got {list(h.shape)}")

    def _initial(self, hx, layer: int, direction: int, B: int):
        """The op's initial states [S, B, 1, N, D] of one layer and direction, or None."""
        if hx is None:
            return None
        index = layer * (2 if self.bidirectional else 1) + direction
        N = self.num_heads
        return torch.stack([h[index] for h in hx]).view(self._states, B, 1, N, self.hidden_size // N)

    def _run(self, x: torch.Tensor, hx: Optional[Tuple[torch.Tensor, ...]]):
        """Every sequence as long as the batch: x [B, T, F] batch first; hx the
        initial states (h[, c]) [L * dirs, B, H] or None. Returns output
        [B, T, dirs * H] and the final states, each [L * dirs, B, H]."""
        B, T, _ = x.shape
        H, N = self.hidden_size, self.num_heads
        finals = [[] for _ in range(self._states)]
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(2 if self.bidirectional else 1):
                w_ih, R, b = self._layer_weights(layer, direction)
                source = layer_input.flip(1) if direction else layer_input
                Wx = torch.matmul(source, w_ih.t()).view(B, T, -1, N, H // N)
                all_states, last = flashrnn(Wx, R, b, self._initial(hx, layer, direction, B),
                                            function=self._cell, backend=self.backend)
                for s in range(self._states):
                    finals[s].append(last[s].reshape(B, H))
                out = all_states[0].reshape(B, T, H)
                outputs.append(out.flip(1) if direction else out)
            layer_input = self._next_input(outputs, layer)
        return layer_input, tuple(torch.stack(f) for f in finals)

    def _run_tokens(self, tokens: torch.Tensor, sequence: torch.Tensor, position: torch.Tensor,
                    lengths: List[int], hx: Optional[Tuple[torch.Tensor, ...]]):
        """Sequences of their own lengths: tokens [total, F], token j being
        token position[j] of sequence sequence[j] (both [total] on the tokens'
        device; lengths the B sequences' on the host). Without hx the
        sequences share the kernels' rows (flashrnn_varlen's layout: each
        restarts from zero at its first token), with it each runs in a row of
        its own from its initial states. Returns the output tokens
        [total, dirs * H] in the given order and the final states, each
        [L * dirs, B, H]."""
        B, H, N = len(lengths), self.hidden_size, self.num_heads
        name = type(self).__name__
        # The reverse direction runs each token where its mirror image runs forward.
        layouts = layouts_on(place_rows(lengths, share_rows=hx is None), sequence, position,
                             directions=2 if self.bidirectional else 1)
        finals = [[] for _ in range(self._states)]
        layer_input = tokens
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(2 if self.bidirectional else 1):
                w_ih, R, b = self._layer_weights(layer, direction)
                Wx = torch.matmul(layer_input, w_ih.t()).view(tokens.shape[0], -1, N, H // N)
                initial = self._initial(hx, layer, direction, B)
                states, last_states = flashrnn_on_layout(Wx, R, b, layouts[direction],
                                                         None if initial is None else initial[:, :, 0], name,
                                                         h_only=True, function=self._cell, backend=self.backend)
                for s in range(self._states):
                    finals[s].append(last_states[s].reshape(B, H))
                outputs.append(states[0].reshape(-1, H))
            layer_input = self._next_input(outputs, layer)
        return layer_input, tuple(torch.stack(f) for f in finals)

    def _next_input(self, outputs, layer: int) -> torch.Tensor:
        """The directions' outputs joined, with dropout between layers."""
        joined = torch.cat(outputs, dim=-1) if len(outputs) == 2 else outputs[0]
        if self.dropout > 0 and self.training and layer + 1 < self.num_layers:
            joined = torch.nn.functional.dropout(joined, self.dropout, training=True)
        return joined

    def _forward(self, input, hx, lengths):
        name = type(self).__name__
        packed = isinstance(input, PackedSequence)
        if packed:
            if lengths is not None:
                raise ValueError(f"{name}: lengths= is for padded input; a PackedSequence carries its own")
            x = input.data
            B = int(input.batch_sizes[0])
            unbatched = False
        else:
            if not isinstance(input, torch.Tensor) or input.dim() not in (2, 3):
                raise ValueError(f"{name}: input must be a 2-D (unbatched) or 3-D tensor or a PackedSequence, "
                                 f"got {getattr(input, 'shape', type(input).__name__)}")
            unbatched = input.dim() == 2
            x = input.unsqueeze(0) if unbatched else (input if self.batch_first else input.transpose(0, 1))
            B, T = x.shape[0], x.shape[1]
        if unbatched and hx is not None:
            hx = tuple(h.unsqueeze(1) for h in hx) if isinstance(hx, tuple) else hx.unsqueeze(1)
        self._check_input(x, hx, B)
        states = None if hx is None else (hx if isinstance(hx, tuple) else (hx,))
        if packed:
            # The rows of the input's data, in the packed (longest first) order;
            # states come in and go out in the caller's, as torch.nn's do.
            sequence, position, lengths = _packed_tokens(input)
            if states is not None and input.sorted_indices is not None:
                states = tuple(h.index_select(1, input.sorted_indices) for h in states)
            tokens, finals = self._run_tokens(x, sequence, position, lengths, states)
            if input.unsorted_indices is not None:
                finals = tuple(f.index_select(1, input.unsorted_indices) for f in finals)
            return PackedSequence(tokens, input.batch_sizes, input.sorted_indices, input.unsorted_indices), finals
        if lengths is None:
            output, finals = self._run(x.contiguous(), states)
        else:
            lengths = torch.as_tensor(lengths).to(torch.long).flatten().cpu()
            if lengths.numel() != B or (lengths < 1).any() or (lengths > T).any():
                raise ValueError(f"{name}: lengths must be {B} values in 1..{T} (one per sequence), "
                                 f"got {lengths.tolist()}")
            # The valid positions b * T + t, sequence after sequence: the tokens' own order.
            sequence, position, _, _ = back_to_back(lengths.tolist(), x.device)
            valid = sequence * T + position
            tokens, finals = self._run_tokens(x.reshape(B * T, -1).index_select(0, valid), sequence, position,
                                              lengths.tolist(), states)
            output = tokens.new_zeros(B * T, tokens.shape[-1]).index_copy(0, valid, tokens).view(B, T, -1)
        if unbatched:
            output, finals = output.squeeze(0), tuple(f.squeeze(1) for f in finals)
        elif not self.batch_first:
            output = output.transpose(0, 1)
        return output, finals


class LSTM(_RNNBase):
    """torch.nn.LSTM on flashtrain's op: output, (h_n, c_n) = lstm(input, (h_0, c_0)).
    proj_size is not supported."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None, *, num_heads: int = 1, backend: str = "auto"):
        if proj_size:
            raise ValueError(f"LSTM: proj_size={proj_size} is not supported (the op's recurrence reads the "
                             "full hidden state)")
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype, num_heads=num_heads, backend=backend)

    def forward(self, input, hx: Optional[Tuple[torch.Tensor, torch.Tensor]] = None, *, lengths=None):
        if hx is not None and (not isinstance(hx, tuple) or len(hx) != 2):
            raise ValueError("LSTM: hx must be a tuple (h_0, c_0)")
        output, (h_n, c_n) = self._forward(input, hx, lengths)
        return output, (h_n, c_n)


class GRU(_RNNBase):
    """torch.nn.GRU on flashtrain's op: output, h_n = gru(input, h_0)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None, *, num_heads: int = 1, backend: str = "auto"):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype, num_heads=num_heads, backend=backend)

    def forward(self, input, hx: Optional[torch.Tensor] = None, *, lengths=None):
        output, (h_n,) = self._forward(input, hx, lengths)
        return output, h_n


class RNN(_RNNBase):
    """torch.nn.RNN (Elman, tanh) on flashtrain's op: output, h_n = rnn(input, h_0)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device=None, dtype=None, *, num_heads: int = 1,
                 backend: str = "auto"):
        if nonlinearity != "tanh":
            raise ValueError(f"RNN: nonlinearity={nonlinearity!r} is not supported (the op's Elman cell is tanh)")
        super().__init__("RNN_TANH", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype, num_heads=num_heads, backend=backend)
        self.nonlinearity = "tanh"

    def forward(self, input, hx: Optional[torch.Tensor] = None, *, lengths=None):
        output, (h_n,) = self._forward(input, hx, lengths)
        return output, h_n


# --- flashtrain's own layers and blocks ------------------------------------------------------

def _head_dim(name: str, dim: int, num_heads: int) -> int:
    for key, value in (("dim", dim), ("num_heads", num_heads)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}: {key} must be a positive int, got {value!r}")
    if dim % num_heads:
        raise ValueError(f"{name}: dim {dim} is not a multiple of num_heads {num_heads}")
    return dim // num_heads


def _ffn_width(name: str, dim: int, ffn_factor: float, multiple_of: int = DEFAULTS["ffn_multiple_of"]) -> int:
    if ffn_factor < 0:
        raise ValueError(f"{name}: ffn_factor must not be negative (0: no feed-forward), got {ffn_factor}")
    return ffn_hidden(dim, ffn_factor, multiple_of) if ffn_factor > 0 else 0


class _TakesCuSeqlens:
    """forward(x, state=None, *, cu_seqlens=None) for the public layers and blocks:
    with cu_seqlens (int [n + 1]: 0, ..., total) x [total, dim] is n sequences back to
    back and the state one row per sequence (None: each from zero); no state, window or
    scan crosses from one sequence into the next. (A block hands its layer the
    sequences as a third argument, made once.)"""

    def forward(self, x, state=None, segments=None, *, cu_seqlens=None):
        if cu_seqlens is not None:
            name = type(self).__name__
            if not isinstance(x, torch.Tensor) or x.dim() != 2:
                raise ValueError(f"{name}: with cu_seqlens x must be [total, dim] (the sequences back to "
                                 f"back), got {getattr(x, 'shape', type(x).__name__)}")
            segments = Segments.of(cu_seqlens, x.shape[0], x.device, name)
        return super().forward(x, state, segments)


class SLSTM(_TakesCuSeqlens, SlstmMixer):
    """xLSTM's sLSTM layer: a causal depthwise convolution + SiLU feeding the i and f gates,
    head-wise gate projections, the sLSTM cell (exponential input gate, normaliser and
    stabiliser: docs/CELLS.md) on the op, a per-head LayerNorm.
    forward(x [B, T, dim], state=None) -> (y [B, T, dim], state); cu_seqlens= for
    sequences back to back (x [total, dim])."""

    def __init__(self, dim: int, num_heads: int = 4, conv_kernel: int = DEFAULTS["conv_kernel"], *,
                 eps: float = DEFAULTS["norm_eps"], backend: str = "auto", num_blocks: int = 1):
        head_dim = _head_dim("SLSTM", dim, num_heads)
        if conv_kernel < 0:
            raise ValueError(f"SLSTM: conv_kernel must be >= 0 (0: no convolution), got {conv_kernel}")
        super().__init__(dim, num_heads, head_dim, conv_kernel, eps, backend, num_blocks)


class SLSTMBlock(_TakesCuSeqlens, Block):
    """The residual sLSTM block of flashtrain's LMs (xLSTM's): x + SLSTM(LayerNorm(x)), then
    + the gated feed-forward (ffn_factor x dim, rounded up to 64; 0: none).
    forward(x [B, T, dim], state=None, cu_seqlens=None) -> (y, state). num_blocks (the model's depth) scales
    the initialisation of what writes into the residual stream."""

    def __init__(self, dim: int, num_heads: int = 4, conv_kernel: int = DEFAULTS["conv_kernel"], *,
                 ffn_factor: float = DEFAULTS["ffn_factor"], eps: float = DEFAULTS["norm_eps"],
                 backend: str = "auto", num_blocks: int = 1):
        mixer = SLSTM(dim, num_heads, conv_kernel, eps=eps, backend=backend, num_blocks=num_blocks)
        super().__init__("slstm", mixer, dim, eps, _ffn_width("SLSTMBlock", dim, ffn_factor), num_blocks)


class RecurrentBlock(_TakesCuSeqlens, Block):
    """The residual LSTM / GRU / Elman block of flashtrain's LMs: x + out_proj(h of the cell
    over LayerNorm(x)), num_heads heads of dim / num_heads (a block-diagonal recurrence), then
    + the gated feed-forward. forward(x [B, T, dim], state=None, cu_seqlens=None) -> (y, state)."""

    def __init__(self, dim: int, num_heads: int = 4, kind: str = "lstm", *,
                 ffn_factor: float = DEFAULTS["ffn_factor"], eps: float = DEFAULTS["norm_eps"],
                 backend: str = "auto", num_blocks: int = 1, block_diagonal_input: bool = False):
        name = type(self).__name__
        if kind not in ("lstm", "gru", "elman"):
            raise ValueError(f"{name}: kind must be lstm, gru or elman (SLSTMBlock is the sLSTM's), got {kind!r}")
        head_dim = _head_dim(name, dim, num_heads)
        mixer = RecurrentMixer(kind, dim, num_heads, head_dim, block_diagonal_input, False, backend, num_blocks)
        super().__init__(kind, mixer, dim, eps, _ffn_width(name, dim, ffn_factor), num_blocks)


class LSTMBlock(RecurrentBlock):
    """RecurrentBlock with the LSTM cell: the block of configs/lstm_12head.toml's model."""

    def __init__(self, dim: int, num_heads: int = 4, **options):
        super().__init__(dim, num_heads, "lstm", **options)


class LanguageModel(FlashtrainLM):
    """flashtrain's language model as the trainer builds it: an embedding, `blocks` (one kind
    per layer: lstm, gru, elman, slstm, linear_scan, transformer; a plain model stacks bare
    lstm / gru / elman layers), a final norm and the head (the embedding's weight when
    tie_embeddings). forward(tokens [B, T]) -> logits; forward_with_state and generate()
    carry the blocks' states. from_config() takes a [model] section (an export's
    config.json["training_config"]["model"], or the keys of a TOML config)."""

    def __init__(self, vocab_size: int, dim: int, blocks, num_heads: int = 4, head_dim: int = 0, *,
                 structure: str = "residual", tie_embeddings: bool = True,
                 ffn_factor: float = DEFAULTS["ffn_factor"], ffn_multiple_of: int = DEFAULTS["ffn_multiple_of"],
                 conv_kernel: int = DEFAULTS["conv_kernel"], norm_eps: float = DEFAULTS["norm_eps"],
                 rope_theta: float = DEFAULTS["rope_theta"], backend: str = "auto"):
        blocks = [blocks] if isinstance(blocks, str) else list(blocks)
        if structure not in ("residual", "plain"):
            raise ValueError(f"LanguageModel: structure must be residual or plain, got {structure!r}")
        known = PLAIN_KINDS if structure == "plain" else BLOCK_KINDS
        if not blocks or any(kind not in known for kind in blocks):
            raise ValueError(f"LanguageModel: blocks must be a non-empty list of {', '.join(known)} "
                             f"(a {structure} model), got {blocks!r}")
        for key, value in (("vocab_size", vocab_size), ("dim", dim), ("num_heads", num_heads)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"LanguageModel: {key} must be a positive int, got {value!r}")
        head_dim = head_dim or _head_dim("LanguageModel", dim, num_heads)
        hidden = 0 if structure == "plain" else _ffn_width("LanguageModel", dim, ffn_factor, ffn_multiple_of)
        config = {"vocab_size": vocab_size, "d_model": dim, "n_heads": num_heads, "head_dim": head_dim,
                  "blocks": blocks, "structure": structure, "tie_embeddings": bool(tie_embeddings),
                  "norm_eps": norm_eps, "rope_theta": rope_theta}
        # The trainer's choices (trainer/src/run/model_factory.cpp): one feed-forward width for every
        # block, a dense input projection, the scan as wide as the model.
        layout = [{"ffn_hidden": hidden, "block_diagonal": False, "conv_kernel": conv_kernel,
                   "scan_width": dim} for _ in blocks]
        super().__init__(config, layout, backend)

    @classmethod
    def from_config(cls, model: dict, vocab_size: int = 0, backend: str = "auto"):
        """The model of a [model] section (its keys as in configs/*.toml); vocab_size
        overrides the section's (which is 0 where the tokenizer decides)."""
        kinds = model.get("kind", ["lstm"])
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        layers = int(model.get("n_layers", len(kinds)))
        if len(kinds) == 1:
            kinds = kinds * layers
        return cls(vocab_size or int(model["vocab_size"]), int(model["dim"]), kinds,
                   int(model.get("n_heads", 4)), int(model.get("head_dim", 0)),
                   structure=model.get("structure", "residual"),
                   tie_embeddings=bool(model.get("tie_embeddings", True)),
                   ffn_factor=float(model.get("ffn_factor", DEFAULTS["ffn_factor"])),
                   ffn_multiple_of=int(model.get("ffn_multiple_of", DEFAULTS["ffn_multiple_of"])),
                   conv_kernel=int(model.get("conv_kernel", DEFAULTS["conv_kernel"])),
                   norm_eps=float(model.get("norm_eps", DEFAULTS["norm_eps"])),
                   rope_theta=float(model.get("rope_theta", DEFAULTS["rope_theta"])), backend=backend)
