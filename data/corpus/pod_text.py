"""Paragraphs of Perl's POD documentation: text paragraphs with formatting
codes resolved, headings and item labels as paragraphs of their own;
verbatim (indented, i.e. code) paragraphs and directives dropped."""

import re

from text_cleaning import normalize_space

_ESCAPES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/", "quot": '"', "amp": "&"}
_DOUBLE = re.compile(r"[A-Z]<<+\s+(.*?)\s+>>+", re.S)
_SINGLE = re.compile(r"([A-Z])<([^<>]*)>")


def _resolve(match):
    code, inner = match.group(1), match.group(2)
    if code == "E":
        return _ESCAPES.get(inner, "")
    if code in "XZ":
        return ""
    if code == "L":
        return inner.split("|", 1)[0]  # the link's text, not its target
    return inner


def resolve_codes(text):
    text = _DOUBLE.sub(lambda m: m.group(1), text)
    while True:  # innermost codes first, until none is left
        resolved = _SINGLE.sub(_resolve, text)
        if resolved == text:
            return text
        text = resolved


def pod_paragraphs(pod):
    out = []
    skipping_block = False
    for block in re.split(r"\n[ \t]*\n", pod.replace("\r\n", "\n")):
        if not block.strip():
            continue
        if block.startswith("="):
            command, _, rest = block.partition(" ")
            if command == "=begin":
                skipping_block = True
            elif command == "=end":
                skipping_block = False
            elif command.startswith("=head") or (command == "=item" and rest.strip() not in ("*", "")):
                out.append(normalize_space(resolve_codes(rest)))
            continue
        if skipping_block or block[0] in " \t":
            continue  # verbatim: code and examples
        out.append(normalize_space(resolve_codes(block)))
    return [p for p in out if p]
