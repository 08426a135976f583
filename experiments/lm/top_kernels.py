"""The heaviest GPU kernels and copies of a Kineto (Chrome) trace, summed by
name: total time, count, mean, share of all device time. With --by-op, summed
instead by the operator that launched them: the autograd node for backward
work, else the outermost operator, then the innermost one (needs eager steps:
inside a replayed CUDA graph no operator runs; training.cuda_graph = off).

    python3 experiments/lm/top_kernels.py TRACE.json [--top N] [--width W] [--by-op]

Standard library only; the trace is what `flashtrain --profile` writes.
"""
import bisect
import argparse
import collections
import json

DEVICE_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}


def device_events(trace):
    for event in trace.get("traceEvents", []):
        if event.get("ph") == "X" and event.get("cat") in DEVICE_CATEGORIES:
            yield event["name"], float(event.get("dur", 0.0)), event.get("args", {}).get("correlation")


def launching_operators(trace):
    """kernel index -> "outer > inner" operator label, through the runtime call's correlation id."""
    events = trace.get("traceEvents", [])
    operators = {}  # thread -> [(start, end, name)] sorted by start
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            operators.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e.get("dur", 0.0), e["name"]))
    for ops in operators.values():
        ops.sort()
    launches = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {}):
            launches[e["args"]["correlation"]] = (e["tid"], e["ts"])
    def label(correlation):
        if correlation not in launches:
            return "(no operator)"
        thread, time = launches[correlation]
        ops = operators.get(thread, [])
        enclosing = [op for op in ops[: bisect.bisect_right(ops, (time, float("inf"), ""))] if op[1] >= time]
        if not enclosing:
            return "(no operator)"
        outer = next((op[2] for op in enclosing if op[2].startswith("autograd::engine")), enclosing[0][2])
        outer = outer.replace("autograd::engine::evaluate_function: ", "backward ")
        return outer if outer == enclosing[-1][2] else f"{outer} > {enclosing[-1][2]}"
    return label


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--width", type=int, default=100, help="kernel names are cut to this many characters")
    parser.add_argument("--by-op", action="store_true", help="sum by launching operator, not by kernel name")
    args = parser.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    totals = collections.defaultdict(lambda: [0.0, 0])
    label = launching_operators(trace) if args.by_op else None
    for name, microseconds, correlation in device_events(trace):
        if label:
            name = label(correlation)
        totals[name][0] += microseconds
        totals[name][1] += 1
    everything = sum(t for t, _ in totals.values()) or 1.0
    print(f"{'ms':>9} {'share':>6} {'count':>6} {'mean us':>8}  {'operator' if args.by_op else 'kernel'} ({len(totals)} names, {everything / 1e3:.2f} ms in all)")
    for name, (total, count) in sorted(totals.items(), key=lambda item: -item[1][0])[: args.top]:
        print(f"{total / 1e3:9.3f} {100 * total / everything:5.1f}% {count:6d} {total / count:8.1f}  {name[: args.width]}")


if __name__ == "__main__":
    main()
