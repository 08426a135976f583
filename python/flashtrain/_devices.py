"""The inputs of an op share one device: the check both ops make first."""
from typing import Optional, Sequence, Tuple

import torch


def check_one_device(op: str, named: Sequence[Tuple[str, Optional[torch.Tensor]]]) -> None:
    """Raises ValueError naming the first tensor whose device differs from the
    first one's. Without it, a meta tensor among CPU ones would send the call to
    the shape-only (fake) kernel, which returns uninitialised memory."""
    present = [(name, t) for name, t in named if t is not None]
    first_name, first = present[0]
    for name, t in present[1:]:
        if t.device != first.device:
            raise ValueError(f"{op}: {name} is on {t.device} but {first_name} is on {first.device}; "
                             "every input must be on one device")
