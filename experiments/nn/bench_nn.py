#!/usr/bin/env python3
"""flashtrain.nn's LSTM and GRU against torch.nn's (cuDNN) on one GPU, the
same module call on both sides: one dense layer of hidden units fed hidden
units (batch first), fp16 and bf16, forward alone (no_grad) and forward +
backward of a sum, padded batches and packed ones (lengths drawn in
[T/2, T], or with --lengths uniform in [1, T], where sequences share the
kernels' rows: each record says how many rows ours runs; the PackedSequence
made once, outside the timing; beside each packed case, ours on a padded
batch of the same tokens, whole rows of T). Each case first
checks both outputs against torch.nn's in float32
(TF32 off) with the same weights; then times each side with CUDA events, the
median of --reps calls after warm-up (fewer, at least 5, where they would
take over a second). Writes one JSON record per case.

    python3 experiments/nn/bench_nn.py [--kinds lstm,gru] [--hidden 256,768,1024,2048]
        [--batch 1,8,16,64,256] [--T 1024] [--dtypes fp16,bf16] [--packed] [--lengths half|uniform]
        [--reps 20] [--gpus 0,1,2,3] [--out experiments/results/nn/bench_nn.json]

With --gpus, each (kind, dtype) slice runs as a process of its own on one of
those GPUs (a slice per GPU at a time, so no two timings share a GPU) and the
slices' records are merged into --out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence

import flashtrain.nn
from flashtrain._varlen import varlen_layout

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
# Largest |ours - float32| and |cuDNN - float32| accepted before timing (outputs are in [-1, 1]).
TOLERANCE = {"fp16": 2e-2, "bf16": 1e-1}
KINDS = {"lstm": "LSTM", "gru": "GRU"}  # -> the class name in torch.nn and flashtrain.nn


def parse_list(text, convert):
    return [convert(v) for v in text.split(",") if v]


def timed(call, reps, budget_s=1.0):
    """Median milliseconds of `call` over reps calls (fewer, but at least 5, where
    reps calls would take over budget_s), each between two CUDA events."""
    for _ in range(2):
        call()
    torch.cuda.synchronize()
    started = time.perf_counter()
    call()
    torch.cuda.synchronize()
    reps = max(5, min(reps, int(budget_s / max(time.perf_counter() - started, 1e-6))))
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def make_input(x, lengths):
    return x if lengths is None else pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)


def output_of(result):
    out = result[0]
    return out.data if isinstance(out, torch.nn.utils.rnn.PackedSequence) else out


LENGTHS = {"half": lambda T: (T // 2, T + 1), "uniform": lambda T: (1, T + 1)}  # randint's bounds


def measure(kind, H, B, T, dtype_name, packed, reps, spread="half", seed=0):
    name = KINDS[kind]
    dtype = DTYPES[dtype_name]
    torch.manual_seed(seed)
    reference = getattr(torch.nn, name)(H, H, batch_first=True, device="cuda", dtype=torch.float32)
    theirs = getattr(torch.nn, name)(H, H, batch_first=True, device="cuda", dtype=dtype)
    theirs.load_state_dict(reference.state_dict())
    ours = getattr(flashtrain.nn, name).from_torch(theirs)
    for module in (reference, theirs):
        module.flatten_parameters()  # cuDNN's one weight buffer, so that it does not compact every call
    x = torch.randn(B, T, H, device="cuda", dtype=dtype)
    lengths = None
    if packed:
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(*LENGTHS[spread](T), (B,), generator=g)
    record = {"kind": kind, "hidden": H, "batch": B, "T": T, "dtype": dtype_name, "packed": packed,
              "tokens": int(lengths.sum()) if packed else B * T, "kernel_rows": B}
    if packed:  # the rows of [max length] ours runs: sequences share them (no initial states)
        cu_seqlens = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
        record.update(lengths=spread, kernel_rows=varlen_layout(cu_seqlens, int(lengths.sum())).rows)

    with torch.no_grad():
        expected = output_of(reference(make_input(x.float(), lengths)))
        for side, module in (("ours", ours), ("cudnn", theirs)):
            got = output_of(module(make_input(x, lengths)))
            record[f"{side}_max_error"] = float((got.float() - expected).abs().max())
    record["checked"] = all(record[f"{s}_max_error"] <= TOLERANCE[dtype_name] for s in ("ours", "cudnn"))
    if not record["checked"]:
        return record

    # The input is made once, outside the timing, a leaf that takes gradients:
    # a module's cost, not that of packing (pack_padded_sequence's backward
    # copies time step by time step on the host, ~10 ms at T 1024, the same for
    # both sides).
    given = make_input(x, lengths)
    if packed:
        given = PackedSequence(given.data.detach().requires_grad_(), given.batch_sizes, given.sorted_indices,
                               given.unsorted_indices)
    else:
        given = given.detach().clone().requires_grad_()
    for side, module in (("ours", ours), ("cudnn", theirs)):
        def forward():
            with torch.no_grad():
                module(given)

        def forward_backward():
            output_of(module(given)).float().sum().backward()
        record[f"{side}_fw_ms"] = timed(forward, reps)
        record[f"{side}_fwbw_ms"] = timed(forward_backward, reps)
    for p in ("fw", "fwbw"):
        record[f"speedup_{p}"] = record[f"cudnn_{p}_ms"] / record[f"ours_{p}_ms"]
    if packed:
        # Ours on a padded batch of the same tokens (whole rows of T: as many
        # as the packed tokens fill): what packing should cost at most.
        rows = -(-record["tokens"] // T)
        same = torch.randn(rows, T, H, device="cuda", dtype=dtype, requires_grad=True)

        def padded_forward():
            with torch.no_grad():
                ours(same)

        def padded_forward_backward():
            ours(same)[0].float().sum().backward()
        record["same_tokens_padded_rows"] = rows
        record["ours_same_tokens_padded_fw_ms"] = timed(padded_forward, reps)
        record["ours_same_tokens_padded_fwbw_ms"] = timed(padded_forward_backward, reps)
        for p in ("fw", "fwbw"):
            record[f"packed_over_padded_{p}"] = record[f"ours_{p}_ms"] / record[f"ours_same_tokens_padded_{p}_ms"]
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kinds", default="lstm,gru")
    parser.add_argument("--hidden", default="256,768,1024,2048")
    parser.add_argument("--batch", default="1,8,16,64,256")
    parser.add_argument("--T", default="1024")
    parser.add_argument("--dtypes", default="fp16,bf16")
    parser.add_argument("--packed", action="store_true", help="also packed batches")
    parser.add_argument("--lengths", default="half", choices=sorted(LENGTHS),
                        help="packed lengths drawn in [T/2, T] (half) or [1, T] (uniform)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--gpus", default="", help="run the (kind, dtype) slices in parallel on these GPUs")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "results", "nn",
                                                      "bench_nn.json"))
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("bench_nn: needs a CUDA GPU")
    for kind in parse_list(args.kinds, str):
        if kind not in KINDS:
            sys.exit(f"bench_nn: unknown kind {kind!r}; choose from {', '.join(KINDS)}")
    for d in parse_list(args.dtypes, str):
        if d not in DTYPES:
            sys.exit(f"bench_nn: unknown dtype {d!r}; choose from {', '.join(DTYPES)}")
    if args.gpus:
        return run_on_gpus(args, argv if argv is not None else sys.argv[1:])
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    records = []
    started = time.time()
    for kind in parse_list(args.kinds, str):
        for dtype in parse_list(args.dtypes, str):
            for T in parse_list(args.T, int):
                for H in parse_list(args.hidden, int):
                    for B in parse_list(args.batch, int):
                        for packed in ((False, True) if args.packed else (False,)):
                            r = measure(kind, H, B, T, dtype, packed, args.reps, args.lengths)
                            records.append(r)
                            timing = (f"ours {r['ours_fw_ms']:.2f} / {r['ours_fwbw_ms']:.2f} ms, cuDNN "
                                      f"{r['cudnn_fw_ms']:.2f} / {r['cudnn_fwbw_ms']:.2f} ms"
                                      if r["checked"] else
                                      f"NOT TIMED: error ours {r['ours_max_error']:.3g}, "
                                      f"cuDNN {r['cudnn_max_error']:.3g}")
                            if r["checked"] and packed:
                                timing += (f"; ours padded, same tokens ({r['same_tokens_padded_rows']} rows) "
                                           f"{r['ours_same_tokens_padded_fw_ms']:.2f} / "
                                           f"{r['ours_same_tokens_padded_fwbw_ms']:.2f} ms")
                            print(f"{kind} {dtype} T {T} H {H} B {B}{' packed' if packed else ''}: {timing}",
                                  flush=True)
    write(args.out, {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                     "cudnn": torch.backends.cudnn.version(), "seconds": round(time.time() - started, 1),
                     "command": " ".join(sys.argv), "tolerance": TOLERANCE, "records": records})


def write(path, result):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(path + ".tmp", path)
    print(f"wrote {path}")


def without_option(argv, name):
    """argv less `name VALUE` and `name=VALUE`."""
    kept, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == name:
            skip = True
        elif not a.startswith(name + "="):
            kept.append(a)
    return kept


def run_on_gpus(args, argv):
    """Each (kind, dtype) slice as a child process on a free GPU of --gpus; the merged records into --out."""
    gpus = parse_list(args.gpus, str)
    base = argv
    for option in ("--gpus", "--out", "--kinds", "--dtypes"):  # each child gets its own
        base = without_option(base, option)
    slices = [(k, d) for k in parse_list(args.kinds, str) for d in parse_list(args.dtypes, str)]
    started, results, running = time.time(), [], {}
    with tempfile.TemporaryDirectory() as tmp:
        while slices or running:
            while slices and len(running) < len(gpus):
                kind, dtype = slices.pop(0)
                gpu = next(g for g in gpus if g not in running.values())
                out = os.path.join(tmp, f"{kind}_{dtype}.json")
                child = subprocess.Popen([sys.executable, os.path.abspath(__file__), *base, "--kinds", kind,
                                          "--dtypes", dtype, "--out", out],
                                         env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu})
                running[(child, out)] = gpu
            time.sleep(1)
            for (child, out) in [key for key in running if key[0].poll() is not None]:
                del running[(child, out)]
                if child.returncode != 0:
                    sys.exit(f"bench_nn: a slice failed (exit {child.returncode}): {' '.join(child.args)}")
                results.append(json.load(open(out)))
    merged = dict(results[0], seconds=round(time.time() - started, 1), command=" ".join(sys.argv),
                  records=[r for result in results for r in result["records"]])
    write(args.out, merged)


if __name__ == "__main__":
    main()
