"""Entries of dictd dictionaries (<name>.index + <name>.dict.dz).

Each index line is "headword<TAB>offset<TAB>length" with offset and length in
dictd's base64 digits; the .dict.dz file is gzip-compatible (dictzip).
Several headwords may share an entry; entries are returned once, in file order.
"""

import gzip

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_VALUE = {c: i for i, c in enumerate(_B64)}


def b64_number(text):
    value = 0
    for c in text:
        value = value * 64 + _B64_VALUE[c]
    return value


def read_entries(index_path, dict_path):
    """Yields the text of every entry, skipping dictd's 00-database-* entries."""
    spans = set()
    with open(index_path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise ValueError(f"{index_path}:{number}: expected 3 tab-separated fields, found {len(parts)}")
            if parts[0].startswith("00-database") or parts[0].startswith("00database"):
                continue
            spans.add((b64_number(parts[1]), b64_number(parts[2])))
    with gzip.open(dict_path, "rb") as f:
        data = f.read()
    for offset, length in sorted(spans):
        yield data[offset:offset + length].decode("utf-8", "replace")
