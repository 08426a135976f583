#!/usr/bin/env python3
"""Builds the corpus documents from unpacked Debian packages.

    extract_corpus.py --list-packages [--small]
    extract_corpus.py --root UNPACKED --out DOCS [--small] [--jobs N] [--stats STATS.json]

Reads every source of corpus_sources.py (the small ones with --small), keeps
prose paragraphs (text_cleaning.keep_paragraph), drops every paragraph whose
dedupe key was seen before - across all sources, in a fixed order, so the
result does not depend on --jobs - and writes each document as
DOCS/<source>/<name>.txt: one paragraph per line, blank lines between.
DOCS is replaced only when complete (built in DOCS.tmp, then renamed).
"""

import argparse
import json
import multiprocessing
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus_sources import SOURCES  # noqa: E402
from text_cleaning import dedupe_key, keep_paragraph  # noqa: E402

SMALL_SOURCE_BYTES = 1_000_000  # per source in --small mode: a few MB in all


def _extract(task):
    index, source_index, unit, max_bytes = task
    source = SOURCES[source_index]
    try:
        return index, source.extract(unit, max_bytes)
    except Exception as e:  # name the unit: the traceback of a worker is hard to read
        raise RuntimeError(f"source {source.name}: cannot extract {unit}: {e}") from e


def safe_name(name):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "doc"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", help="directory the packages were unpacked into (dpkg -x)")
    parser.add_argument("--out", help="documents directory to write")
    parser.add_argument("--small", action="store_true", help="the quickstart subset, about 1 MB per source")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--stats", help="write per-source counts here (JSON)")
    parser.add_argument("--sources", help="comma-separated subset of the sources (default: all)")
    parser.add_argument("--list-packages", action="store_true", help="print the packages needed and exit")
    args = parser.parse_args()

    sources = [(i, s) for i, s in enumerate(SOURCES) if s.small or not args.small]
    if args.sources:
        wanted = args.sources.split(",")
        unknown = sorted(set(wanted) - {s.name for s in SOURCES})
        if unknown:
            parser.error(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(s.name for s in SOURCES)}")
        sources = [(i, s) for i, s in sources if s.name in wanted]
    if args.list_packages:
        for _, s in sources:
            print("\n".join(s.packages))
        return 0
    if not args.root or not args.out:
        parser.error("--root and --out are required")

    max_bytes = SMALL_SOURCE_BYTES if args.small else None
    tasks, skipped = [], []
    for i, s in sources:
        units = s.units(args.root)
        if not units:
            skipped.append(s.name)
            print(f"extract: source {s.name}: nothing found under {args.root} (package missing?); skipped",
                  file=sys.stderr)
        tasks.extend((len(tasks), i, unit, max_bytes) for unit in units)

    out_tmp = args.out.rstrip("/") + ".tmp"
    shutil.rmtree(out_tmp, ignore_errors=True)
    os.makedirs(out_tmp)
    stats = {s.name: {"documents": 0, "paragraphs": 0, "bytes": 0, "dropped_not_prose": 0,
                      "dropped_duplicate": 0} for _, s in sources if s.name not in skipped}
    seen = set()
    start = time.time()
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        # imap keeps task order, so the dedupe below sees paragraphs in a fixed order.
        for index, documents in pool.imap(_extract, tasks, chunksize=1):
            source = SOURCES[tasks[index][1]]
            st = stats[source.name]
            if max_bytes is not None and st["bytes"] >= max_bytes:
                continue
            for name, paragraphs in documents:
                kept = []
                for p in paragraphs:
                    if not keep_paragraph(p):
                        st["dropped_not_prose"] += 1
                        continue
                    key = dedupe_key(p)
                    if key in seen:
                        st["dropped_duplicate"] += 1
                        continue
                    seen.add(key)
                    kept.append(p)
                if not kept:
                    continue
                text = "\n\n".join(kept) + "\n"
                directory = os.path.join(out_tmp, source.name)
                os.makedirs(directory, exist_ok=True)
                path = os.path.join(directory, safe_name(name) + ".txt")
                if os.path.exists(path):
                    raise RuntimeError(f"source {source.name}: two documents map to {path}")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
                st["documents"] += 1
                st["paragraphs"] += len(kept)
                st["bytes"] += len(text.encode("utf-8"))
            if index % 200 == 0 or index == len(tasks) - 1:
                total = sum(s["bytes"] for s in stats.values())
                print(f"\rextract: {index + 1}/{len(tasks)} units, {total / 1e6:.1f} MB, "
                      f"{time.time() - start:.0f} s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    shutil.rmtree(args.out, ignore_errors=True)
    os.rename(out_tmp, args.out)

    summary = {"sources": stats, "skipped_sources": skipped,
               "documents": sum(s["documents"] for s in stats.values()),
               "bytes": sum(s["bytes"] for s in stats.values()),
               "seconds": round(time.time() - start, 1)}
    if args.stats:
        with open(args.stats + ".tmp", "w") as f:
            json.dump(summary, f, indent=2)
        os.replace(args.stats + ".tmp", args.stats)
    for name, st in stats.items():
        print(f"  {name:13s} {st['documents']:6d} docs {st['bytes'] / 1e6:8.2f} MB  "
              f"(dropped: {st['dropped_not_prose']} not prose, {st['dropped_duplicate']} duplicate)",
              file=sys.stderr)
    if summary["bytes"] == 0:
        print("extract: no text was extracted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
