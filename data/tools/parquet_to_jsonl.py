#!/usr/bin/env python3
"""Parquet -> gzip-compressed JSON lines, the form `flashtrain prepare` reads.

Corpora ship as Parquet (one row per document, the text in a string column);
prepare reads JSON lines, so this turns each INPUT.parquet into
DIR/INPUT.jsonl.gz, one {"text": ...} object per row with a non-empty text,
streamed a batch of rows at a time (never the whole file in memory) and
written under a temporary name, renamed when complete.

    .venv/bin/python data/tools/parquet_to_jsonl.py INPUT.parquet... --output DIR [--text-field text]

Needs pyarrow (scripts/setup.sh installs it into .venv).
"""
import argparse
import gzip
import json
import os
import sys


def convert(path, output_dir, field, batch_rows=4096):
    """Writes output_dir/<name>.jsonl.gz from one Parquet file; returns (rows written,
    rows skipped: null or empty text)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(path)
    schema = source.schema_arrow
    if field not in schema.names:
        raise SystemExit(f"{path}: no column '{field}' (columns: {', '.join(schema.names)}); "
                         f"name the text column with --text-field")
    kind = schema.field(field).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise SystemExit(f"{path}: column '{field}' holds {kind}, not text")
    name = os.path.basename(path)
    if name.endswith(".parquet"):
        name = name[: -len(".parquet")]
    target = os.path.join(output_dir, name + ".jsonl.gz")
    partial = target + ".partial"
    written = skipped = 0
    with gzip.open(partial, "wt", encoding="utf-8", newline="\n") as out:
        for batch in source.iter_batches(batch_size=batch_rows, columns=[field]):
            for text in batch.column(0).to_pylist():
                if not text:
                    skipped += 1
                    continue
                out.write(json.dumps({"text": text}, ensure_ascii=False))
                out.write("\n")
                written += 1
    os.replace(partial, target)
    return target, written, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="INPUT.parquet")
    parser.add_argument("--output", required=True, help="folder of the .jsonl.gz files (made if missing)")
    parser.add_argument("--text-field", default="text", help="the column holding each document's text")
    args = parser.parse_args(argv)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise SystemExit("parquet_to_jsonl: pyarrow is missing; scripts/setup.sh installs it into .venv "
                         "(run this script with .venv/bin/python)")
    os.makedirs(args.output, exist_ok=True)
    for path in args.inputs:
        target, written, skipped = convert(path, args.output, args.text_field)
        print(f"{target}: {written} documents" + (f" ({skipped} empty or null rows skipped)" if skipped else ""))


if __name__ == "__main__":
    sys.exit(main())
