"""Text to token ids as flashtrain does it: the trainer's own tokenizer
(data/src/tokenizer.cpp, SentencePiece) compiled into the extension.

    tokenizer = Tokenizer("outputs/quickstart/export/step_00000200/tokenizer.model")
    ids = tokenizer.encode("Hello world.", bos=True)   # as `flashtrain sample` feeds a prompt
    text = tokenizer.decode(ids)
"""
import os
from typing import List, Sequence, Union

import torch


class Tokenizer:
    """A SentencePiece model as the trainer uses it: each line encoded on its own,
    the byte piece <0x0A> between lines, so decode(encode(text)) == text."""

    def __init__(self, model: Union[str, os.PathLike]):
        self.model = os.fspath(model)
        if not os.path.isfile(self.model):
            raise FileNotFoundError(f"Tokenizer: no SentencePiece model at {self.model}")
        if not hasattr(torch.ops.flashtrain, "tokenize"):
            raise RuntimeError("Tokenizer: this build of the extension has no tokenizer (it was built "
                               "without SentencePiece; install libsentencepiece-dev and rebuild)")
        ids = torch.ops.flashtrain.tokenizer_ids(self.model)
        self.vocab_size, self.pad_id, self.unk_id, self.bos_id, self.eos_id, self.newline_id = ids

    def encode(self, text: str, bos: bool = False) -> List[int]:
        """The ids of `text`; bos=True puts the beginning-of-document id first (documents
        start with it in the shards, so a prompt does too)."""
        if not isinstance(text, str):
            raise TypeError(f"Tokenizer.encode: text must be a str, got {type(text).__name__}")
        ids = list(torch.ops.flashtrain.tokenize(self.model, text))
        return [self.bos_id] + ids if bos else ids

    def decode(self, ids: Union[Sequence[int], torch.Tensor]) -> str:
        """The text of `ids` (a list or a 1-D tensor); bos, eos and pad decode to nothing."""
        if isinstance(ids, torch.Tensor):
            if ids.dim() != 1:
                raise ValueError(f"Tokenizer.decode: expected one sequence of ids, got shape "
                                 f"{list(ids.shape)}")
            ids = ids.tolist()
        return torch.ops.flashtrain.detokenize(self.model, [int(i) for i in ids])

    def __repr__(self) -> str:
        return f"Tokenizer({self.model!r}, vocab_size={self.vocab_size})"
