"""flashtrain: flashtrain's ahead-of-time FlashRNN-style kernels as torch ops.

    from flashtrain import flashrnn   # instead of: from flashrnn import flashrnn
    from flashtrain import flashrnn_varlen  # sequences back to back, cu_seqlens as FlashAttention's
    from flashtrain import scan       # instead of: from accelerated_scan.warp import scan
    from flashtrain.nn import LSTM    # instead of: from torch.nn import LSTM (also GRU, RNN)
    from flashtrain.nn import SLSTMBlock  # the sLSTM and LSTM blocks of flashtrain's LMs
    model = flashtrain.load_export(dir)  # a `flashtrain export` as an nn.Module (generate())
    tokenizer = flashtrain.Tokenizer(f"{dir}/tokenizer.model")  # the run's text <-> ids

Importing loads the prebuilt extension (_C.so) with torch.ops.load_library;
nothing is compiled at import or at first use.
"""
from . import _library

LIBRARY = _library.load()

from ._recurrent import flashrnn, gru_from_flashrnn  # noqa: E402
from ._varlen import flashrnn_varlen  # noqa: E402
from ._scan import scan  # noqa: E402
from .checkpoint import ExportError, FlashtrainLM, GenerationState, load_export  # noqa: E402
from ._tokenizer import Tokenizer  # noqa: E402
from . import nn  # noqa: E402  torch.nn's LSTM, GRU and RNN on the op

__version__ = "0.1.0"
__all__ = ["flashrnn", "flashrnn_varlen", "gru_from_flashrnn", "scan", "load_export", "FlashtrainLM",
           "GenerationState", "ExportError", "Tokenizer", "nn", "LIBRARY"]
