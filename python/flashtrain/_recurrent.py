"""flashrnn(): FlashRNN's call signature on flashtrain's ahead-of-time kernels."""
from typing import Optional, Tuple, Union

import torch

from . import _ops  # noqa: F401  (registers autograd and fake kernels)
from ._devices import check_one_device

# FlashRNN's backend names and ours -> the op's.
_BACKENDS = {
    "auto": "auto",
    "fused": "fused",
    "alternating": "alternating",
    "vanilla": "vanilla",
    "cuda_fused": "fused",      # FlashRNN: the persistent fused kernel
    "cuda": "alternating",      # FlashRNN: one GEMM + one pointwise kernel per step
    "vanilla_fwbw": "vanilla",  # FlashRNN: torch ops with a hand-written backward
}
_DTYPES = {
    "bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32,
    "float64": torch.float64,
}
_HALF = (torch.bfloat16, torch.float16)


def _check_tensor(value, name, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"flashrnn: {name} must be a torch.Tensor, got {type(value).__name__}")


def _kernel_dtype(dtype) -> Optional[torch.dtype]:
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if dtype in _DTYPES:
        return _DTYPES[dtype]
    raise ValueError(f"flashrnn: unknown dtype {dtype!r}; choose one of {', '.join(_DTYPES)} "
                     "or a torch.dtype (None keeps the inputs' dtypes)")


def _cast(t: Optional[torch.Tensor], dtype: torch.dtype) -> Optional[torch.Tensor]:
    """To the kernel dtype; float32 R, b and states stay float32 under a half
    kernel dtype (master weights and carried states, docs/CELLS.md)."""
    if t is None or t.dtype == dtype or (dtype in _HALF and t.dtype == torch.float32):
        return t
    return t.to(dtype)


def flashrnn(
    Wx: torch.Tensor,
    R: torch.Tensor,
    b: torch.Tensor,
    states: Optional[torch.Tensor] = None,
    function: str = "lstm",
    config: None = None,
    backend: str = "auto",
    dtype: Union[str, torch.dtype, None] = None,
    *,
    reset_mask: Optional[torch.Tensor] = None,
    gradient_recurrent_cut: bool = False,
    gradient_recurrent_clip: float = 0.0,
    forward_clip: float = 0.0,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The recurrent op, with FlashRNN's signature and layouts.

    Wx [B, T, G, N, D] input pre-activations, R [G, N, D, D] recurrent matrices,
    b [Gb, N, D] biases, states [S, B, 1, N, D] initial states (zeros if None).
    Returns (states [S, B, T, N, D], last_states [S, B, 1, N, D]); state 0 is h.

    function: "lstm" | "slstm" | "gru" | "elman" (GRU slots: docs/CELLS.md and
    python/README.md say how FlashRNN's order maps onto ours; gru_from_flashrnn does it).
    backend: "auto" (default), "fused", "alternating", "vanilla", or FlashRNN's
    "cuda_fused" (= fused), "cuda" (= alternating), "vanilla_fwbw" (= vanilla).
    CPU tensors always run the vanilla backend.
    dtype: None keeps the inputs' dtypes; a name or torch.dtype casts Wx (and R, b,
    states unless they are float32 under a half dtype) first, as FlashRNN's dtype does.
    reset_mask: bool [B, T]; where set, step t starts from the initial states.
    gradient_recurrent_cut / gradient_recurrent_clip: drop / clamp the gradient that
    flows back into h through R. forward_clip: clamp h to [-clip, clip] (0 = off).
    Gradients flow to Wx, R, b and states.
    """
    if config is not None:
        raise TypeError("flashrnn: FlashRNN's config objects are not taken; pass function=, "
                        "backend= and dtype= instead")
    _check_tensor(Wx, "Wx")
    _check_tensor(R, "R")
    _check_tensor(b, "b")
    _check_tensor(states, "states", optional=True)
    _check_tensor(reset_mask, "reset_mask", optional=True)
    check_one_device("flashrnn", (("Wx", Wx), ("R", R), ("b", b), ("states", states),
                                  ("reset_mask", reset_mask)))
    if not isinstance(function, str):
        raise TypeError(f"flashrnn: function must be a string, got {type(function).__name__}")
    if backend not in _BACKENDS:
        raise ValueError(f"flashrnn: unknown backend {backend!r}; choose one of "
                         f"{', '.join(_BACKENDS)}")
    kernel_dtype = _kernel_dtype(dtype)
    if kernel_dtype is not None:
        Wx = Wx.to(kernel_dtype)
        R, b, states = _cast(R, kernel_dtype), _cast(b, kernel_dtype), _cast(states, kernel_dtype)
    op_backend = _BACKENDS[backend] if Wx.is_cuda else "vanilla"
    keep = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (Wx, R, b, states))
    out = torch.ops.flashtrain.flashrnn_forward(
        Wx, R, b, states, reset_mask, function, op_backend, bool(gradient_recurrent_cut),
        float(gradient_recurrent_clip), float(forward_clip), keep)
    return out[0], out[1]


def gru_from_flashrnn(Wx: torch.Tensor, R: torch.Tensor, b: torch.Tensor):
    """FlashRNN's GRU slots -> ours (docs/CELLS.md).

    FlashRNN: Wx (r, z, n), R (n, r, z), b (n_recurrent, r, z, n_input).
    Ours:     Wx (r, z, n), R (r, z, n), b (r, z, n_input, n_recurrent).
    Works on [..., G, ...] tensors in the user-facing layouts (Wx's gate dim is 2,
    R's and b's is 0)."""
    return Wx, R[[1, 2, 0]], b[[1, 2, 3, 0]]
