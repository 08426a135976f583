"""Loads a flashtrain export with Python's `safetensors` package and compares
it with what the C++ test expected (names, dtypes, shapes, sums, first values).

    python check_export.py EXPORT_DIR EXPECTED_JSON

Exit status 0: it matches; 1: it does not; 77: `safetensors` (or numpy) is not
installed, so the check cannot run (the C++ test then skips).
"""
import json
import math
import sys

try:
    import numpy as np
    from safetensors import safe_open
except ImportError as error:
    print(f"cannot import safetensors/numpy: {error}")
    sys.exit(77)


def main(export_dir, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    problems = []
    with safe_open(f"{export_dir}/model.safetensors", framework="np") as f:
        if f.metadata() != {"format": "pt"}:
            problems.append(f"metadata {f.metadata()}")
        names = sorted(f.keys())
        if names != sorted(expected):
            problems.append(f"names {names} != {sorted(expected)}")
        for name in names:
            if name not in expected:
                continue
            tensor = f.get_tensor(name)
            want = expected[name]
            if tensor.dtype != np.float32:
                problems.append(f"{name}: dtype {tensor.dtype}")
            if list(tensor.shape) != want["shape"]:
                problems.append(f"{name}: shape {list(tensor.shape)} != {want['shape']}")
            total = float(tensor.astype(np.float64).sum())
            if not math.isclose(total, want["sum"], rel_tol=1e-6, abs_tol=1e-6):
                problems.append(f"{name}: sum {total} != {want['sum']}")
            first = [float(x) for x in tensor.reshape(-1)[: len(want["first"])]]
            if first != want["first"]:
                problems.append(f"{name}: first values {first} != {want['first']}")
    with open(f"{export_dir}/config.json") as f:
        config = json.load(f)
    if config["vocab_size"] != expected["embedding.weight"]["shape"][0]:
        problems.append(f"config.json vocab_size {config['vocab_size']}")
    for problem in problems:
        print(problem)
    print(f"checked {len(names)} tensors: {'ok' if not problems else 'MISMATCH'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
