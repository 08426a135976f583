"""Turning extracted text into clean paragraphs, and deciding which to keep.

A paragraph is one line of prose: hard-wrapped lines are joined, whitespace is
collapsed, control characters are dropped. keep_paragraph() rejects what is
not running English text (code, tables, lists of symbols, fragments);
dedupe_key() makes near-identical paragraphs collide.
"""

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
# Characters that are rare in prose but common in code and markup.
_CODE_CHARS = frozenset("{}[]<>=;|\\/_$#@^~`*&%")
_CODE_TOKENS = re.compile(r"(\(\)|==|!=|->|::|&&|\|\||#include|\bdef |\breturn\b|\bself\.|\bvoid\b|\bint\b\s+\w+\s*[;=(])")
_PROMPT = re.compile(r"^(>>>|\$ |# |\.\.\. |% )")


def normalize_space(text):
    """Collapses whitespace runs to single spaces and drops control characters."""
    text = "".join(c for c in text if c in "\t\n" or unicodedata.category(c)[0] != "C")
    return _SPACE.sub(" ", text.replace("\u00a0", " ")).strip()


def paragraphs_from_text(text):
    """Splits plain text at blank lines and unwraps each paragraph to one line."""
    out = []
    for block in _BLANK_LINE.split(text.replace("\r\n", "\n")):
        p = normalize_space(block)
        if p:
            out.append(p)
    return out


def keep_paragraph(p):
    """True for running prose: enough words and letters, few code characters."""
    if len(p) < 12 or len(p.split()) < 3:
        return False
    if _PROMPT.match(p):
        return False
    letters = sum(c.isalpha() for c in p)
    if letters < 0.6 * len(p):
        return False
    if sum(c in _CODE_CHARS for c in p) > 0.05 * len(p):
        return False
    if len(_CODE_TOKENS.findall(p)) >= 2:
        return False
    return True


def dedupe_key(p):
    """8-byte digest of the paragraph's lower-cased letters and digits only."""
    letters = "".join(c for c in p.lower() if c.isalnum())
    return hashlib.blake2b(letters.encode("utf-8"), digest_size=8).digest()
