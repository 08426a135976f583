"""flashrnn_varlen(): the recurrent op over sequences of different lengths laid
back to back (FlashAttention's varlen layout: tokens first, cu_seqlens the
boundaries), each with its own initial and final states.

The kernels run rows of one length T. A VarlenLayout places the sequences in
such rows: without initial states several share a row, back to back, and the
op's reset mask restarts each from zero at its first token (longest first,
each into the row with the most room left; T = the longest sequence), so the
padding the kernels step over is what the packing leaves; with initial states
each sequence has a row of its own. One gather puts the tokens into the rows,
one takes the states back out, and one the state after each sequence's last
token.

Rows are chosen on the host from the n lengths alone (place_rows); the
per-token indices are made on the tokens' device from those n values
(layouts_on, back_to_back), which reach a GPU through pinned memory without
waiting for it (to_device): a call does no per-token host work and queues its
kernels behind the previous call's instead of stalling on a copy. cu_seqlens
given on the CPU cost no device synchronisation; on the GPU, one read back.
"""
import heapq
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from ._recurrent import flashrnn


@dataclass
class VarlenLayout:
    """Where each packed token runs: its flat slot row * T + t in a [rows, T]
    batch (`slots` [total]), the slot of each sequence's last token (`last`
    [n]), the steps that start a sequence after the first of its row
    (`reset_mask` [rows, T] bool, or None when no row holds two), and the
    batch's `rows` and `T`."""
    slots: torch.Tensor
    last: torch.Tensor
    reset_mask: Optional[torch.Tensor]
    rows: int
    T: int


def _lengths(cu_seqlens, total: int, name: str) -> List[int]:
    if not isinstance(cu_seqlens, torch.Tensor):
        cu_seqlens = torch.as_tensor(cu_seqlens)
    if cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2 or cu_seqlens.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"{name}: cu_seqlens must be a 1-D int32 or int64 tensor [n + 1] of sequence "
                         f"boundaries (0, end of the first, ..., total), got {cu_seqlens.dtype} "
                         f"{list(cu_seqlens.shape)}")
    bounds = cu_seqlens.tolist()
    lengths = [b - a for a, b in zip(bounds, bounds[1:])]
    if bounds[0] != 0 or bounds[-1] != total or min(lengths) < 1:
        raise ValueError(f"{name}: cu_seqlens must start at 0, rise by at least 1 per sequence (every "
                         f"sequence has a token) and end at the {total} tokens given, got {bounds}")
    return lengths


def to_device(tensors: Sequence[Optional[torch.Tensor]], device) -> List[Optional[torch.Tensor]]:
    """Small host-built long tensors onto `device` (None stays None). To a GPU they
    go as one buffer through pinned memory, asynchronously: a .to() from pageable
    memory waits for every kernel queued before it, so it would stall the host
    behind the GPU."""
    device = torch.device("cpu" if device is None else device)
    if device.type != "cuda":
        return [None if t is None else t.to(device) for t in tensors]
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError("variable-length sequences cannot be captured in a CUDA graph: their layout is "
                           "placed on the host at each call, and a replay would copy from a host buffer that "
                           "no longer holds it; capture the padded call (every sequence as long as the batch)")
    present = [t for t in tensors if t is not None]
    if not present:
        return list(tensors)
    flat = torch.cat([t.reshape(-1).to(torch.long) for t in present]).pin_memory().to(device, non_blocking=True)
    parts = iter(flat.split([t.numel() for t in present]))
    return [None if t is None else next(parts).view(t.shape) for t in tensors]


@dataclass
class RowPlacement:
    """Where sequences of `lengths` run in the kernels' [rows, T] batch, decided
    on the host from the lengths alone: sequence k's first token at the flat
    slot `start[k]` (row * T + offset in the row)."""
    lengths: List[int]
    start: List[int]
    rows: int
    T: int


def place_rows(lengths: List[int], share_rows: bool) -> RowPlacement:
    """share_rows: several sequences to a row (they must start from zero
    states), longest first, each into the row with the most room if it fits
    there, else into a new row; else one sequence per row. O(n log n) on the
    host, nothing per token."""
    n, T = len(lengths), max(lengths)
    if not share_rows:
        return RowPlacement(list(lengths), [k * T for k in range(n)], n, T)
    start = [0] * n
    roomiest: List[Tuple[int, int]] = []  # (-room, row), a heap
    rows = 0
    for k in sorted(range(n), key=lambda k: -lengths[k]):
        if roomiest and -roomiest[0][0] >= lengths[k]:
            room, r = heapq.heappop(roomiest)
            room = -room
        else:
            room, r, rows = T, rows, rows + 1
        start[k] = r * T + T - room
        if room > lengths[k]:
            heapq.heappush(roomiest, (lengths[k] - room, r))
    return RowPlacement(list(lengths), start, rows, T)


def layouts_on(placement: RowPlacement, sequence: torch.Tensor, position: torch.Tensor,
               directions: int = 1) -> List[VarlenLayout]:
    """The layouts of tokens, token j being token position[j] of sequence
    sequence[j] (both [total], long, on the tokens' device), in the rows of
    `placement`: forward, and with directions = 2 the reverse direction, whose
    token runs where its mirror image (token L - 1 - position of its sequence)
    runs forward. Both end each sequence at the same slot and restart at the
    same steps. Per token only device work: the host sends n values."""
    p = placement
    restarts = [s for s in p.start if s % p.T]  # sequences after the first of their row
    start, length, restart = to_device([torch.tensor(p.start), torch.tensor(p.lengths),
                                        torch.tensor(restarts) if restarts else None], sequence.device)
    first = start.index_select(0, sequence)
    slots = [first + position]
    if directions == 2:
        slots.append(first + length.index_select(0, sequence) - 1 - position)
    last = start + length - 1
    reset_mask = None
    if restart is not None:
        reset_mask = torch.zeros(p.rows * p.T, dtype=torch.bool, device=sequence.device)
        reset_mask = reset_mask.index_fill_(0, restart, True).view(p.rows, p.T)
    return [VarlenLayout(s, last, reset_mask, p.rows, p.T) for s in slots]


def back_to_back(lengths: List[int], device) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sequences of `lengths` laid back to back: each token's sequence and
    position in it [total], each sequence's first token and length [n], made
    on `device` from the n lengths (no per-token host work, no synchronisation)."""
    host_lengths = torch.tensor(lengths)
    host_first = torch.cumsum(host_lengths, 0) - host_lengths
    length, first = to_device([host_lengths, host_first], device)
    total = sum(lengths)
    sequence = torch.arange(len(lengths), device=length.device).repeat_interleave(length, output_size=total)
    position = torch.arange(total, device=length.device) - first.index_select(0, sequence)
    return sequence, position, first, length


def varlen_layout(cu_seqlens, total: int, share_rows: bool = True, device=None,
                  name: str = "varlen_layout") -> VarlenLayout:
    """The rows a batch of back-to-back sequences runs in. share_rows: pack
    several sequences into a row (the sequences must start from zero states),
    else one sequence per row."""
    lengths = _lengths(cu_seqlens, total, name)
    sequence, position, _, _ = back_to_back(lengths, device)
    return layouts_on(place_rows(lengths, share_rows), sequence, position)[0]


def flashrnn_varlen(
    Wx: torch.Tensor,
    R: torch.Tensor,
    b: torch.Tensor,
    cu_seqlens: Union[torch.Tensor, List[int]],
    states: Optional[torch.Tensor] = None,
    function: str = "lstm",
    backend: str = "auto",
    dtype: Union[str, torch.dtype, None] = None,
    **options,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The recurrent op over n sequences laid back to back.

    Wx [total, G, N, D]: the input pre-activations of every token, sequence
    after sequence; cu_seqlens [n + 1] (int32 or int64): 0, the end of the
    first sequence, ..., total (every sequence at least one token); states
    [S, n, N, D]: each sequence's initial states (zeros if None). R, b, function,
    backend, dtype and the clip options are flashrnn()'s.
    Returns (states [S, total, N, D]: the states after each token, state 0 is h;
    last_states [S, n, N, D]: each sequence's states after its last token).
    Gradients flow to Wx, R, b and states.
    """
    name = "flashrnn_varlen"
    _check_tokens_first(Wx, name)
    layout = varlen_layout(cu_seqlens, Wx.shape[0], share_rows=states is None, device=Wx.device, name=name)
    return flashrnn_on_layout(Wx, R, b, layout, states, name, function=function, backend=backend,
                              dtype=dtype, **options)


def _check_tokens_first(Wx, name: str) -> None:
    if not isinstance(Wx, torch.Tensor) or Wx.dim() != 4:
        raise ValueError(f"{name}: Wx must be a tensor [total, G, N, D] (the tokens of every sequence, "
                         f"back to back), got {getattr(Wx, 'shape', type(Wx).__name__)}")


def flashrnn_on_layout(Wx: torch.Tensor, R: torch.Tensor, b: torch.Tensor, layout: VarlenLayout,
                       states: Optional[torch.Tensor], name: str, h_only: bool = False, **flashrnn_options):
    """flashrnn_varlen on a layout made already (one sequence per row where
    states are given): Wx [total, G, N, D] into its rows, the op, the states
    back out -> (states [S, total, N, D], last_states [S, n, N, D]); h_only:
    of the per-token states only h ([1, total, N, D]: no gather of the others)."""
    total, G, N, D = Wx.shape
    n = layout.last.numel()
    initial = None
    if states is not None:
        if not isinstance(states, torch.Tensor) or states.dim() != 4 or states.shape[1:] != (n, N, D):
            raise ValueError(f"{name}: states must be [S, {n}, {N}, {D}] (one initial state per sequence "
                             f"of cu_seqlens), got {getattr(states, 'shape', type(states).__name__)}")
        initial = states.unsqueeze(2)  # [S, n, 1, N, D]: one row per sequence, in order
    batch = Wx.new_zeros(layout.rows * layout.T, G, N, D).index_copy(0, layout.slots, Wx)
    all_states, _ = flashrnn(batch.view(layout.rows, layout.T, G, N, D), R, b, initial,
                             reset_mask=layout.reset_mask, **flashrnn_options)
    flat = all_states.reshape(all_states.shape[0], layout.rows * layout.T, N, D)
    return (flat[:1] if h_only else flat).index_select(1, layout.slots), flat.index_select(1, layout.last)


@dataclass
class Segments:
    """Sequences laid back to back as the blocks see them (made once per call):
    their boundaries `cu_seqlens` [n + 1] and `lengths` [n], each token's
    `sequence` and `position` in it [total], each sequence's `first` and
    `last` token [n]; all long, on the tokens' device, built on the host from
    `host_lengths`. The kernels' rows for them are placed once (layout()) for
    every layer that runs the op."""
    cu_seqlens: torch.Tensor
    lengths: torch.Tensor
    sequence: torch.Tensor
    position: torch.Tensor
    first: torch.Tensor
    last: torch.Tensor
    host_lengths: List[int] = field(repr=False)
    _layouts: Dict[bool, VarlenLayout] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, cu_seqlens, total: int, device, name: str) -> "Segments":
        host_lengths = _lengths(cu_seqlens, total, name)
        sequence, position, first, lengths = back_to_back(host_lengths, device)
        last = first + lengths - 1
        cu_seqlens = torch.cat([first, last[-1:] + 1])
        return cls(cu_seqlens, lengths, sequence, position, first, last, host_lengths=host_lengths)

    @property
    def count(self) -> int:
        return len(self.host_lengths)

    def layout(self, share_rows: bool) -> VarlenLayout:
        """varlen_layout of these sequences, placed at the first call."""
        if share_rows not in self._layouts:
            self._layouts[share_rows] = layouts_on(place_rows(self.host_lengths, share_rows),
                                                   self.sequence, self.position)[0]
        return self._layouts[share_rows]

    def flashrnn(self, Wx, R, b, states=None, h_only=False, **flashrnn_options):
        """flashrnn_varlen over these sequences, on their cached layout (h_only:
        flashrnn_on_layout's)."""
        _check_tokens_first(Wx, "flashrnn_varlen")
        return flashrnn_on_layout(Wx, R, b, self.layout(states is None), states, "flashrnn_varlen",
                                  h_only=h_only, **flashrnn_options)
