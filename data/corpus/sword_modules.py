"""Text of SWORD Bible and commentary modules (zText / zCom / zCom4 drivers).

A module stores its text in zlib-compressed blocks: <testament>.bzs (or .czs)
holds one 12-byte entry per block (uint32 offset, compressed size,
uncompressed size, little-endian) into <testament>.bzz (.czz). With
BlockType=BOOK a block is one book, with BlockType=CHAPTER one chapter; the
verse index (.bzv / .czv) is not needed to read blocks in order. The text is
OSIS XML; osis_paragraphs() turns it into paragraphs.
"""

import html
import os
import re
import struct
import zlib

_NOTE = re.compile(r"<note\b[^>]*?(?:/>|>.*?</note>)", re.S)
_BREAK = re.compile(r"<(?:chapter|div|p|lg|l|title|lb|list|item)\b[^>]*>|</(?:title|p|l|item)>", re.S)
_TAG = re.compile(r"<[^>]*>")


def read_blocks(module_dir):
    """Yields (testament, block number, text) for every block, OT first."""
    for testament in ("ot", "nt"):
        for index_ext, data_ext in ((".bzs", ".bzz"), (".czs", ".czz")):
            index_path = os.path.join(module_dir, testament + index_ext)
            if not os.path.exists(index_path):
                continue
            with open(index_path, "rb") as f:
                index = f.read()
            with open(os.path.join(module_dir, testament + data_ext), "rb") as f:
                data = f.read()
            if len(index) % 12:
                raise ValueError(f"{index_path}: size {len(index)} is not a multiple of 12")
            for number in range(len(index) // 12):
                offset, size, _ = struct.unpack_from("<III", index, 12 * number)
                if size == 0:
                    continue
                if offset + size > len(data):
                    raise ValueError(f"{index_path}: block {number} ends at byte {offset + size}, "
                                     f"past the end of {data_ext} ({len(data)} bytes)")
                text = zlib.decompress(data[offset:offset + size]).decode("utf-8", "replace")
                yield testament, number, text


def osis_paragraphs(osis):
    """Paragraphs of OSIS text: notes dropped, breaks at paragraph, chapter,
    title and poetry-line elements, all other markup removed."""
    text = _NOTE.sub(" ", osis)
    text = _BREAK.sub("\n\n", text)
    text = html.unescape(_TAG.sub("", text))
    out = []
    for block in text.split("\n\n"):
        p = " ".join(block.split())
        if p:
            out.append(p)
    return out
