#!/usr/bin/env python3
"""Generation speed against prompt length: `flashtrain sample` on the five
models of the parameter-budget comparison (experiments/lm/budget_models.sh),
each trained one step on a corpus (speed does not depend on the weights), for
prompts of about 1k to 32k tokens: the prefill's tokens/s (the prompt in one
pass), the decode's per-token latency (greedy, --new-tokens tokens; recurrent
models with and without the decode step's CUDA graph), and the peak GPU memory.

    python3 experiments/lm/generation_speed.py [--flashtrain build/trainer/flashtrain]
        [--models lstm_12head,...] [--lengths 1024,4096,16384,32768] [--new-tokens 256]
        [--corpus .data/corpus-small] [--out experiments/results/lm/generation_speed.json]

Writes the JSON (one record per run: the parsed report line, the command) and
prints a table. Standard library only.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MODELS = ("lstm_12head", "lstm_1head", "slstm_12head", "transformer", "linear_scan")
# The report line of `flashtrain sample` (stderr).
REPORT = re.compile(r"prefill: (\d+) tokens in ([\d.]+) s \([^)]*\)(?:, wavefront of (\d+) chunks)?; "
                    r"decode: (\d+) tokens in ([\d.]+) s \([^)]*\), "
                    r"(cuda graph|eager[^;]*?)(?: \(captured in ([\d.]+) s\))?(?:; peak GPU memory (\d+) MiB)?$", re.M)
WORDS = ("the of and to in is was for that with as on by at from his her it an were which are this be has had "
         "one two city river time year people world state water house night light small great old new first last "
         "long high little king war music book church school music family company island army north south").split()


def budget_model(name):
    """(config path, [overrides]) of a budget model, from budget_models.sh."""
    script = f'source experiments/lm/budget_models.sh; echo "${{CONFIG[{name}]}}"; echo "${{CHANGES[{name}]}}"'
    config, changes = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True,
                                     check=True).stdout.split("\n")[:2]
    if not config:
        raise SystemExit(f"generation_speed: unknown model {name} (budget_models.sh)")
    return f"configs/{config}.toml", changes.split()


def prompt_text(words, seed=0):
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def sample(flashtrain, flags, text, new_tokens, graph, scratch):
    path = os.path.join(scratch, "prompt.txt")
    with open(path, "w") as f:
        f.write(text)
    command = [flashtrain, "sample", *flags, f"--prompt-file={path}", f"--max-new-tokens={new_tokens}",
               f"--cuda-graph={'on' if graph else 'off'}"]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    match = REPORT.search(run.stderr)
    record = {"command": " ".join(command[1:]), "status": run.returncode}
    if run.returncode != 0 or not match:
        record["error"] = run.stderr.strip()[-2000:]
        return record
    prompt, prefill_s, chunks, new, decode_s, mode, captured, peak = match.groups()
    record.update(prompt_tokens=int(prompt), prefill_s=float(prefill_s), prefill_chunks=int(chunks or 0),
                  new_tokens=int(new),
                  decode_s=float(decode_s), decode_mode=mode.strip(),
                  capture_s=float(captured) if captured else None, peak_mib=int(peak) if peak else None)
    record["prefill_tokens_per_s"] = record["prompt_tokens"] / record["prefill_s"] if record["prefill_s"] else None
    record["ms_per_token"] = 1e3 * record["decode_s"] / record["new_tokens"] if record["new_tokens"] else None
    return record


def table(records):
    lines = ["| model | prompt tokens | prefill s | prefill tok/s | prefill chunks | decode ms/token | decode | peak MiB |",
             "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['model']} | ~{r['target_tokens']} | failed: {r['error'].splitlines()[-1][:80]} | | | | | |")
            continue
        lines.append(f"| {r['model']} | {r['prompt_tokens']} | {r['prefill_s']:.3f} | {r['prefill_tokens_per_s']:.0f} | "
                     f"{r.get('prefill_chunks', 0)} | "
                     f"{r['ms_per_token']:.3f} | {r['decode_mode']} | {r['peak_mib']} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flashtrain", default=os.path.join(ROOT, "build", "trainer", "flashtrain"))
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--lengths", default="1024,4096,16384,32768", help="prompt lengths in tokens (about)")
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--corpus", default=".data/corpus-small", help="tokenizer.model, train_*.bin, val_*.bin")
    parser.add_argument("--device", default="cuda", help="training.device of the runs")
    parser.add_argument("--extra", default="", help="more config overrides for every run, space-separated")
    parser.add_argument("--out", default=os.path.join(ROOT, "experiments", "results", "lm", "generation_speed.json"))
    args = parser.parse_args(argv)
    lengths = [int(v) for v in args.lengths.split(",") if v]
    device = "cpu"
    if args.device != "cpu":
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0"],
                                capture_output=True, text=True).stdout.strip() or "unknown"
    records = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models.split(","):
            config, changes = budget_model(model)
            flags = ["--config", config, *changes, f"--job.dump_folder={scratch}/{model}", f"--training.device={args.device}",
                     f"--tokenizer.path={args.corpus}/tokenizer.model",
                     f"--data.train_shards={args.corpus}/train_*.bin", f"--data.val_shards={args.corpus}/val_*.bin", *args.extra.split()]
            trained = subprocess.run([args.flashtrain, *flags, "--training.steps=1"], cwd=ROOT, capture_output=True,
                                     text=True)
            if trained.returncode != 0:
                records.append({"model": model, "target_tokens": 0, "error": trained.stderr.strip()[-2000:]})
                print(f"{model}: training failed\n{trained.stderr[-1000:]}", file=sys.stderr)
                continue
            # Words per token of this tokenizer on the prompt's words, from a short prompt.
            probe = sample(args.flashtrain, flags, prompt_text(1000), 2, False, scratch)
            tokens_per_word = probe.get("prompt_tokens", 1300) / 1000
            recurrent = model != "transformer"
            for length in lengths:
                text = prompt_text(int(length / tokens_per_word))
                for graph in ((True, False) if recurrent else (True,)):
                    r = sample(args.flashtrain, flags, text, args.new_tokens, graph, scratch)
                    r.update(model=model, target_tokens=length)
                    records.append(r)
                    print(table([r]).splitlines()[-1], flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    result = {"command": "python3 experiments/lm/generation_speed.py " + " ".join(argv or sys.argv[1:]),
              "device": device, "new_tokens": args.new_tokens, "runs": records}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, args.out)
    print(f"\n{device}, greedy, {args.new_tokens} new tokens\n" + table(records))


if __name__ == "__main__":
    main()
