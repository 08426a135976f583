"""The sources of the offline corpus: which Debian packages each needs and
how its documents are read from the unpacked packages.

Every source lists work units (files, modules) and turns a unit into
documents: (name, [paragraph, ...]). Sources marked small make up the
quickstart corpus.
"""

import glob
import gzip
import os
import re

from dictd_files import read_entries
from html_text import paragraphs_from_html
from pod_text import pod_paragraphs
from sword_modules import osis_paragraphs, read_blocks
from text_cleaning import paragraphs_from_text

CHUNK_BYTES = 100_000  # dictionary-like sources are cut into documents of about this size


def chunk(prefix, paragraphs, max_bytes=None):
    """Cuts a long run of short paragraphs (dictionary entries, fortunes) into
    documents of about CHUNK_BYTES; stops after max_bytes if given."""
    docs, current, size, total = [], [], 0, 0
    for p in paragraphs:
        current.append(p)
        size += len(p) + 2
        total += len(p) + 2
        if size >= CHUNK_BYTES:
            docs.append((f"{prefix}{len(docs):05d}", current))
            current, size = [], 0
        if max_bytes is not None and total >= max_bytes:
            break
    if current:
        docs.append((f"{prefix}{len(docs):05d}", current))
    return docs


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def relative_name(path, base):
    name = os.path.relpath(path, base)
    return re.sub(r"\.(html?|pod|txt|gz)$", "", name)


# ---- dictionaries ---------------------------------------------------------

_GCIDE_SOURCE = re.compile(r"\[(?:[^\]]*(?:Webster|PJC|WordNet|Century|RN|Obs\.|Prov\.)[^\]]*)\]")
_PRONUNCIATION = re.compile(r"\\[^\\\n]{1,60}\\")


def dictd_source(name, stem, cleanup=None):
    def units(root):
        return [os.path.join(root, "usr/share/dictd", stem)]

    def extract(unit, max_bytes):
        def paragraphs():  # lazy: chunk() may stop early
            for entry in read_entries(unit + ".index", unit + ".dict.dz"):
                yield from paragraphs_from_text(cleanup(entry) if cleanup else entry)
        return chunk(name + "_", paragraphs(), max_bytes)

    return units, extract


def clean_gcide(entry):
    entry = _GCIDE_SOURCE.sub("", entry)
    entry = _PRONUNCIATION.sub("", entry)
    return entry.replace("{", "").replace("}", "")


def clean_braces(entry):
    return entry.replace("{", "").replace("}", "")


def wordnet_units(root):
    return sorted(glob.glob(os.path.join(root, "usr/share/wordnet/data.*")))


def wordnet_extract(unit, max_bytes):
    """One paragraph per synset: "word, word: gloss"."""
    paragraphs = []
    with open(unit, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("  ") or " | " not in line:
                continue  # the license header
            fields, gloss = line.split(" | ", 1)
            parts = fields.split()
            count = int(parts[3], 16)
            words = [parts[4 + 2 * i].replace("_", " ") for i in range(count)]
            words = [re.sub(r"\(\w+\)$", "", w) for w in words]
            paragraphs.append(", ".join(words) + ": " + gloss.strip())
    return chunk("wordnet_" + os.path.basename(unit).split(".")[1] + "_", paragraphs, max_bytes)


# ---- SWORD modules -----------------------------------------------------------

def sword_source(name, module_path):
    def units(root):
        return [os.path.join(root, "usr/share/sword/modules", module_path)]

    def extract(unit, max_bytes):
        docs, total = [], 0
        for testament, number, text in read_blocks(unit):
            paragraphs = osis_paragraphs(text)
            docs.append((f"{name}_{testament}_{number:03d}", paragraphs))
            total += sum(len(p) for p in paragraphs)
            if max_bytes is not None and total >= max_bytes:
                break
        return docs

    return units, extract


# ---- plain text --------------------------------------------------------------

def jargon_units(root):
    return [os.path.join(root, "usr/share/doc/jargon-text/jargon.txt.gz")]


def jargon_extract(unit, max_bytes):
    return chunk("jargon_", paragraphs_from_text(clean_braces(read_text(unit))), max_bytes)


def fortune_units(root):
    directory = os.path.join(root, "usr/share/games/fortunes")
    return sorted(p for p in glob.glob(os.path.join(directory, "*"))
                  if os.path.isfile(p) and not os.path.islink(p) and "." not in os.path.basename(p))


def fortune_extract(unit, max_bytes):
    fortunes = re.split(r"\n%\n", read_text(unit))
    paragraphs = [" ".join(f.split()) for f in fortunes if f.strip()]
    return chunk("fortunes_" + os.path.basename(unit) + "_", paragraphs, max_bytes)


def pod_units(root):
    return sorted(glob.glob(os.path.join(root, "usr/share/perl/*/pod/*.pod")))


def pod_extract(unit, max_bytes):
    return [("perl_" + relative_name(unit, os.path.dirname(unit)), pod_paragraphs(read_text(unit)))]


# ---- HTML manuals -------------------------------------------------------------

_NOT_CONTENT = re.compile(r"(^|/)(_static|_sources|_images|_downloads|_modules|genindex[^/]*|search|"
                          r"py-modindex|modindex|objects|index-\w+)(\.html|/)")


def html_source(name, base, patterns):
    def units(root):
        base_dir = os.path.join(root, base)
        found = set()
        for pattern in patterns:
            found.update(glob.glob(os.path.join(base_dir, pattern), recursive=True))
        return [(path, base_dir) for path in sorted(found)
                if os.path.isfile(path) and not _NOT_CONTENT.search(os.path.relpath(path, base_dir))]

    def extract(unit, max_bytes):
        path, base_dir = unit
        return [(name + "_" + relative_name(path, base_dir), paragraphs_from_html(read_text(path)))]

    return units, extract


class Source:
    def __init__(self, name, packages, reader, small=False):
        self.name = name
        self.packages = packages
        self.units, self.extract = reader
        self.small = small


SOURCES = [
    Source("gcide", ["dict-gcide"], dictd_source("gcide", "gcide", clean_gcide), small=True),
    Source("devil", ["dict-devil"], dictd_source("devil", "devil", clean_braces), small=True),
    Source("foldoc", ["dict-foldoc"], dictd_source("foldoc", "foldoc", clean_braces)),
    Source("wordnet", ["wordnet-base"], (wordnet_units, wordnet_extract)),
    Source("kjv", ["sword-text-kjv"], sword_source("kjv", "texts/ztext/engKJV2006eb"), small=True),
    Source("web", ["sword-text-web"], sword_source("web", "texts/ztext/engWEB2015eb"), small=True),
    Source("tdavid", ["sword-comm-tdavid"], sword_source("tdavid", "comments/zcom/tdavid")),
    Source("jargon", ["jargon-text"], (jargon_units, jargon_extract), small=True),
    Source("fortunes", ["fortunes", "fortunes-min"], (fortune_units, fortune_extract), small=True),
    Source("perl", ["perl-doc"], (pod_units, pod_extract)),
    Source("python", ["python3.11-doc"], html_source("python", "usr/share/doc/python3.11/html", ["**/*.html"])),
    Source("handbook", ["debian-handbook"], html_source("handbook", "usr/share/doc/debian-handbook/html/en-US", ["*.html"])),
    Source("reference", ["debian-reference-en"], html_source("reference", "usr/share/debian-reference", ["*.en.html"])),
    Source("maintguide", ["maint-guide"], html_source("maintguide", "usr/share/doc/maint-guide/html", ["*.en.html"])),
    Source("gnustandards", ["gnu-standards"], html_source("gnustandards", "usr/share/doc/gnu-standards", ["*.html"])),
    Source("bash", ["bash-doc"], html_source("bash", "usr/share/doc/bash-doc", ["bashref.html"])),
    Source("git", ["git-doc"], html_source("git", "usr/share/doc/git-doc", ["**/*.html"])),
    Source("postgresql", ["postgresql-doc-15"], html_source("postgresql", "usr/share/doc/postgresql-doc-15/html", ["*.html"])),
    Source("django", ["python-django-doc"], html_source("django", "usr/share/doc/python-django-doc/html", ["**/*.html"])),
    Source("linux", ["linux-doc-6.1"], html_source("linux", "usr/share/doc/linux-doc-6.1/html", ["**/*.html"])),
    Source("mhcc", ["sword-comm-mhcc"], sword_source("mhcc", "comments/zcom/mhcc")),
    Source("scofield", ["sword-comm-scofield"], sword_source("scofield", "comments/zcom/scofield")),
    Source("policy", ["debian-policy"], html_source("policy", "usr/share/doc/debian-policy", ["*.html", "fhs/*.html"])),
    Source("devref", ["developers-reference"], html_source("devref", "usr/share/doc/developers-reference/docs", ["*.html"])),
    Source("octave", ["octave-doc"], html_source("octave", "usr/share/doc/octave", ["**/*.html"])),
    Source("java", ["openjdk-17-doc"], html_source("java", "usr/share/doc/openjdk-17-jre-headless/api", ["**/*.html"])),
    Source("libreoffice", ["libreoffice-help-en-us"], html_source("libreoffice", "usr/share/libreoffice/help/en-US", ["**/*.html"])),
    Source("apache", ["apache2-doc"], html_source("apache", "usr/share/doc/apache2-doc/manual/en", ["**/*.html"])),
    Source("cmake", ["cmake-doc"], html_source("cmake", "usr/share/doc/cmake-data/html", ["**/*.html"])),
    Source("zsh", ["zsh-doc"], html_source("zsh", "usr/share/doc/zsh-common/html", ["*.html"])),
    Source("exim", ["exim4-doc-html"], html_source("exim", "usr/share/doc/exim4-doc-html", ["**/*.html"])),
    Source("postfix", ["postfix-doc"], html_source("postfix", "usr/share/doc/postfix/html", ["*.html"])),
    Source("pandas", ["python-pandas-doc"], html_source("pandas", "usr/share/doc/python-pandas-doc/html", ["**/*.html"])),
]
