"""How fast `flashtrain prepare` turns text into shards from each input format
corpora ship as: a folder of .txt files, .jsonl, .jsonl.gz and .jsonl.zst,
holding the same documents (the quickstart corpus's, repeated to --megabytes of
text, each copy its own document). Checks first that every format gives the
same tokens (validation fraction 0, the quickstart tokenizer), then reports per
format and thread count the wall time, the encode time prepare.json records and
MB/s of text, against the .txt folder's.

    python3 experiments/data/prepare_speed.py [--megabytes 1024] [--threads 1,2]
        [--out experiments/results/data/prepare_speed.json]

Needs the setup (bash scripts/setup.sh): build/trainer/flashtrain, the
quickstart corpus's documents (.data/corpus-work/docs) and tokenizer
(.data/corpus-small/tokenizer.model); gzip and zstd command-line tools.
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORMATS = ["txt", "jsonl", "jsonl.gz", "jsonl.zst"]


def documents(source: Path):
    texts = [p.read_text(encoding="utf-8") for p in sorted(source.rglob("*.txt"))]
    if not texts:
        raise SystemExit(f"prepare_speed: no .txt documents under {source} (bash scripts/setup.sh builds them)")
    return texts


def write_inputs(folder: Path, texts, megabytes: float):
    """The same documents in every format; returns {format: input path} and the text bytes."""
    size = sum(len(t.encode()) for t in texts)
    copies = max(1, round(megabytes * 1e6 / size))
    (folder / "txt").mkdir()
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as lines:
        for copy in range(copies):
            for k, text in enumerate(texts):
                # Names sort as the jsonl's lines do (prepare orders documents by name).
                (folder / "txt" / f"{copy:06d}_{k:03d}.txt").write_text(text, encoding="utf-8")
                lines.write(json.dumps({"text": text}) + "\n")
    subprocess.run(f"gzip -6 -c corpus.jsonl > corpus.jsonl.gz && zstd -q -3 -T0 corpus.jsonl -o corpus.jsonl.zst",
                   shell=True, check=True, cwd=folder)
    paths = {"txt": folder / "txt", "jsonl": folder / "corpus.jsonl", "jsonl.gz": folder / "corpus.jsonl.gz",
             "jsonl.zst": folder / "corpus.jsonl.zst"}
    return paths, size * copies


def prepare(flashtrain: str, tokenizer: Path, source: Path, output: Path, threads: int):
    shutil.rmtree(output, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([flashtrain, "prepare", "--output", str(output), "--tokenizer", str(tokenizer),
                    "--val-fraction", "0", "--threads", str(threads), "--quiet", str(source)],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    report = json.loads((output / "prepare.json").read_text())
    return wall, report


def tokens(output: Path) -> bytes:
    return b"".join(p.read_bytes()[1024:] for p in sorted(output.glob("train_*.bin")))  # past the header


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=1024)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--flashtrain", default=str(REPO / "build/trainer/flashtrain"))
    parser.add_argument("--out", default=str(REPO / "experiments/results/data/prepare_speed.json"))
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    tokenizer = REPO / ".data/corpus-small/tokenizer.model"
    texts = documents(REPO / ".data/corpus-work/docs")
    work = Path(args.work or tempfile.mkdtemp(prefix="prepare_speed_"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        paths, text_bytes = write_inputs(work, texts, args.megabytes)
        rows, reference = [], None
        for threads in [int(t) for t in args.threads.split(",")]:
            for fmt in FORMATS:
                output = work / f"out_{fmt}"
                wall, report = prepare(args.flashtrain, tokenizer, paths[fmt], output, threads)
                got = tokens(output)
                reference = reference if reference is not None else got
                if got != reference:
                    raise SystemExit(f"prepare_speed: {fmt} gave other tokens than txt")
                rows.append({"format": fmt, "threads": threads, "input_bytes": os.path.getsize(paths[fmt])
                             if paths[fmt].is_file() else None, "text_bytes": text_bytes,
                             "documents": report["train"]["documents"], "tokens": report["train"]["tokens"],
                             "wall_s": wall, "encode_s": report["seconds"]["encode"],
                             "text_mb_per_s": text_bytes / 1e6 / wall})
                print(f"{fmt:10s} threads {threads}: {wall:7.1f} s, {rows[-1]['text_mb_per_s']:.2f} MB/s", flush=True)
        for row in rows:
            txt = next(r for r in rows if r["format"] == "txt" and r["threads"] == row["threads"])
            row["time_vs_txt"] = row["wall_s"] / txt["wall_s"]
        result = {"command": "python3 experiments/data/prepare_speed.py " + " ".join(
                      f"--{k.replace('_', '-')} {v}" for k, v in (("megabytes", args.megabytes),
                                                                  ("threads", args.threads))),
                  "cpu_count": os.cpu_count(), "text_megabytes": text_bytes / 1e6, "rows": rows}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(f"\n| format | threads | wall s | MB/s of text | time vs .txt |\n|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['format']} | {r['threads']} | {r['wall_s']:.1f} | {r['text_mb_per_s']:.2f} | "
                  f"{r['time_vs_txt']:.2f} |")
        print(f"wrote {args.out}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
