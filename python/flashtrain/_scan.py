"""scan(): accelerated-scan's scan(gates, tokens) on flashtrain's scan kernels."""
from typing import Optional

import torch

from . import _ops  # noqa: F401  (registers autograd and fake kernels)
from ._devices import check_one_device


def scan(
    gates: torch.Tensor,
    tokens: torch.Tensor,
    *,
    x0: Optional[torch.Tensor] = None,
    reverse: bool = False,
    layout: str = "bdt",
    backend: str = "auto",
    return_last: bool = False,
):
    """x[t] = gates[t] * x[t-1] + tokens[t], x[-1] = x0 (zeros if None).

    gates, tokens [B, D, T] (layout="bdt", accelerated-scan's) or [B, T, D]
    (layout="btd"), any T, float32 / bfloat16 / float16 (float32 accumulation)
    or float64 (vanilla backend). reverse=True runs from the end. Returns x like
    gates, or (x, last [B, D]) with return_last=True. backend: "auto" | "cuda" |
    "vanilla"; CPU tensors run the vanilla backend. Gradients flow to gates,
    tokens and x0.
    """
    for value, name in ((gates, "gates"), (tokens, "tokens")):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"scan: {name} must be a torch.Tensor, got {type(value).__name__}")
    if x0 is not None and not isinstance(x0, torch.Tensor):
        raise TypeError(f"scan: x0 must be a torch.Tensor or None, got {type(x0).__name__}")
    check_one_device("scan", (("gates", gates), ("tokens", tokens), ("x0", x0)))
    if not gates.is_cuda and backend == "cuda":
        backend = "vanilla"
    x, last = torch.ops.flashtrain.scan_forward(gates, tokens, x0, layout, bool(reverse), backend)
    return (x, last) if return_last else x
