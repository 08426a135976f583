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

Layouts are placed on the host, from the lengths, and reach the GPU through
pinned memory without waiting for it (to_device): a call queues its kernels
behind the previous call's instead of stalling on a copy. cu_seqlens given on
the CPU cost no device synchronisation; on the GPU, one read back.
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
    """Host-built index tensors onto `device` (None stays None). To a GPU they go
    through pinned memory, asynchronously: a .to() from pageable memory waits for
    every kernel queued before it, so each would stall the host behind the GPU."""
    device = torch.device("cpu" if device is None else device)
    if device.type != "cuda":
        return [None if t is None else t.to(device) for t in tensors]
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError("variable-length sequences cannot be captured in a CUDA graph: their layout is "
                           "placed on the host at each call, and a replay would copy from a host buffer that "
                           "no longer holds it; capture the padded call (every sequence as long as the batch)")
    return [None if t is None else t.pin_memory().to(device, non_blocking=True) for t in tensors]


def varlen_layout(cu_seqlens, total: int, share_rows: bool = True, device=None,
                  name: str = "varlen_layout") -> VarlenLayout:
    """The rows a batch of back-to-back sequences runs in. share_rows: pack
    several sequences into a row (the sequences must start from zero states),
    else one sequence per row."""
    return layout_on(device, host_layout(_lengths(cu_seqlens, total, name), share_rows))


def layout_on(device, layout: VarlenLayout) -> VarlenLayout:
    """A host layout with its index tensors on `device`."""
    slots, last, reset_mask = to_device([layout.slots, layout.last, layout.reset_mask], device)
    return VarlenLayout(slots, last, reset_mask, layout.rows, layout.T)


def host_layout(lengths: List[int], share_rows: bool) -> VarlenLayout:
    """varlen_layout of sequences of these lengths, its tensors on the CPU."""
    n, T, total = len(lengths), max(lengths), sum(lengths)
    row, offset = [0] * n, [0] * n
    if share_rows:
        # Longest first, each into the row with the most room if it fits there,
        # else into a new row: (-room, row) in a heap, O(n log n).
        roomiest: List[Tuple[int, int]] = []
        rows = 0
        for k in sorted(range(n), key=lambda k: -lengths[k]):
            if roomiest and -roomiest[0][0] >= lengths[k]:
                room, r = heapq.heappop(roomiest)
                room = -room
            else:
                room, r, rows = T, rows, rows + 1
            row[k], offset[k] = r, T - room
            if room > lengths[k]:
                heapq.heappush(roomiest, (lengths[k] - room, r))
    else:
        row, rows = list(range(n)), n
    starts = [0]
    for length in lengths[:-1]:
        starts.append(starts[-1] + length)
    # Token i of sequence k sits at row[k] * T + offset[k] + (i - starts[k]).
    base = torch.tensor([row[k] * T + offset[k] - starts[k] for k in range(n)], dtype=torch.long)
    sequence_of = torch.repeat_interleave(torch.arange(n), torch.tensor(lengths))
    slots = base[sequence_of] + torch.arange(total)
    last = torch.tensor([row[k] * T + offset[k] + lengths[k] - 1 for k in range(n)], dtype=torch.long)
    reset_mask = None
    if any(offset):
        reset_mask = torch.zeros(rows * T, dtype=torch.bool)
        reset_mask[torch.tensor([row[k] * T + offset[k] for k in range(n) if offset[k]])] = True
        reset_mask = reset_mask.view(rows, T)
    return VarlenLayout(slots, last, reset_mask, rows, T)


def mirror_index(lengths: torch.Tensor) -> torch.Tensor:
    """[total] on the CPU, for sequences of `lengths` [n] (CPU) laid back to back:
    for each token, the index of the token as far from its sequence's end as it
    is from the start (token t of L -> L - 1 - t). The reverse direction of a
    bidirectional layer runs each token where its mirror image runs forward."""
    ends = torch.cumsum(lengths, 0)
    sequence = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
    return (2 * ends - lengths - 1)[sequence] - torch.arange(sequence.numel())


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
                       states: Optional[torch.Tensor], name: str, **flashrnn_options):
    """flashrnn_varlen on a layout made already (one sequence per row where
    states are given): Wx [total, G, N, D] into its rows, the op, the states
    back out -> (states [S, total, N, D], last_states [S, n, N, D])."""
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
    return flat.index_select(1, layout.slots), flat.index_select(1, layout.last)


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
        lengths = torch.tensor(host_lengths)
        ends = torch.cumsum(lengths, 0)
        first = ends - lengths
        sequence = torch.repeat_interleave(torch.arange(lengths.numel()), lengths)
        position = torch.arange(total) - first[sequence]
        tensors = to_device([torch.cat([first[:1], ends]), lengths, sequence, position, first, ends - 1], device)
        return cls(*tensors, host_lengths=host_lengths)

    @property
    def count(self) -> int:
        return len(self.host_lengths)

    def layout(self, share_rows: bool) -> VarlenLayout:
        """varlen_layout of these sequences, placed at the first call."""
        if share_rows not in self._layouts:
            self._layouts[share_rows] = layout_on(self.cu_seqlens.device,
                                                  host_layout(self.host_lengths, share_rows))
        return self._layouts[share_rows]

    def flashrnn(self, Wx, R, b, states=None, **flashrnn_options):
        """flashrnn_varlen over these sequences, on their cached layout."""
        _check_tokens_first(Wx, "flashrnn_varlen")
        return flashrnn_on_layout(Wx, R, b, self.layout(states is None), states, "flashrnn_varlen",
                                  **flashrnn_options)
