"""Loads the prebuilt extension (_C.so) into torch: nothing is compiled here."""
import os
from pathlib import Path

import torch

_PACKAGE_DIR = Path(__file__).resolve().parent


def library_path() -> Path:
    """The extension: $FLASHTRAIN_LIBRARY, else the _C.so installed next to this file."""
    override = os.environ.get("FLASHTRAIN_LIBRARY")
    return Path(override) if override else _PACKAGE_DIR / "_C.so"


def load() -> Path:
    path = library_path()
    if not path.is_file():
        raise ImportError(
            f"flashtrain: the extension {path} is missing. Build it "
            "(cmake --build build --target flashtrain_torch) and install the package "
            "(pip install ./python), or point FLASHTRAIN_LIBRARY at build/python/_C.so."
        )
    try:
        torch.ops.load_library(str(path))
    except OSError as error:
        raise ImportError(
            f"flashtrain: cannot load {path} into torch {torch.__version__}: {error}. "
            "The extension must be built against the torch it is imported into; rebuild "
            "it and reinstall the package."
        ) from error
    built = torch.ops.flashtrain.torch_version()
    running = torch.__version__.split("+")[0]
    if built != running:
        raise ImportError(
            f"flashtrain: {path} was built against torch {built} but torch {running} is "
            "imported; rebuild it against this torch and reinstall the package."
        )
    return path
