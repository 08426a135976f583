"""Our checkpoints in PyTorch: a `flashtrain export` directory as an nn.Module.

    model = flashtrain.load_export("outputs/run/export/step_00001000", dtype=torch.float64)
    logits = model(tokens)                                  # [B, T] -> [B, T, vocab]
    tokens = model.generate(prompt, max_new_tokens=64)      # carrying each block's state

The modules are flashtrain.modules' (the C++ models' math, models/README.md; checked
against the independent numpy reference experiments/lm/reference_lm.py); this file reads
and checks an export and builds them from it. The modules' parameter names are the
export's keys, so model.state_dict() is the export.
"""
import json
import os
from typing import Union

import torch

from .modules import BLOCK_KINDS, CELLS, PLAIN_KINDS, FlashtrainLM, GenerationState, _shape  # noqa: F401

STRUCTURES = ("residual", "plain")

MANIFEST = "manifest.json"


class ExportError(ValueError):
    """A malformed `flashtrain export` directory (a ValueError)."""


# --- loading -------------------------------------------------------------------------------

def _config_int(config, key, directory, minimum=1):
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ExportError(f"{directory}/config.json: {key} must be an integer >= {minimum}, "
                          f"got {value!r}")
    return value


def _fnv1a64_of_file(path) -> str:
    """The checksum manifest.json records for a file: FNV-1a (64 bit) as 16 hex digits,
    computed by the trainer's own code (trainer/src/checkpoint/checksum.cpp, in the extension)."""
    if not hasattr(torch.ops.flashtrain, "fnv1a64_of_file"):
        raise ImportError("flashtrain: the extension predates load_export's manifest check "
                          "(no fnv1a64_of_file); rebuild it (cmake --build build --target "
                          "flashtrain_torch) and reinstall the package")
    return torch.ops.flashtrain.fnv1a64_of_file(os.fspath(path))


def _verify_manifest(directory):
    """Checks every file manifest.json lists against its size and checksum, as the trainer
    does before it reads an export or a checkpoint (trainer/src/checkpoint/staged_directory.cpp,
    verify_manifest): a flipped bit or an edited config.json is refused, not loaded."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.isfile(path):
        raise ExportError(f"{directory} has no {MANIFEST}, so it is not a `flashtrain export` "
                          "directory (flashtrain export writes config.json, model.safetensors "
                          f"and, last, {MANIFEST}; a directory without it was never finished)")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except json.JSONDecodeError as error:
        raise ExportError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != "flashtrain-manifest" \
            or not isinstance(manifest.get("files"), dict):
        raise ExportError(f"{path} is not a flashtrain manifest (format, files)")
    if manifest.get("kind") != "export":
        raise ExportError(f"{directory} is a flashtrain {manifest.get('kind')!r} directory, not "
                          f"an export ({MANIFEST}: kind); `flashtrain export` writes one")
    files = manifest["files"]
    for name in ("config.json", "model.safetensors"):
        if name not in files:
            raise ExportError(f"{path} does not list {name}; it does not describe this export")
    for name, entry in files.items():
        file = os.path.join(directory, name)
        if os.path.basename(name) != name or name in (".", ".."):
            raise ExportError(f"{path} lists {name!r}, which is not a file name in {directory}")
        if not isinstance(entry, dict) or "bytes" not in entry or "fnv1a64" not in entry:
            raise ExportError(f"{path}: the entry of {name} has no bytes or fnv1a64")
        if not os.path.isfile(file):
            raise ExportError(f"{directory} has no {name}, which {MANIFEST} lists")
        size = os.path.getsize(file)
        if size != entry["bytes"]:
            raise ExportError(f"{file} has {size} bytes; {MANIFEST} says {entry['bytes']} "
                              "(a truncated or replaced file)")
        checksum = _fnv1a64_of_file(file)
        if checksum != entry["fnv1a64"]:
            raise ExportError(f"{file} is corrupt or was edited: FNV-1a checksum {checksum}, "
                              f"{MANIFEST} says {entry['fnv1a64']}")


def _read_config(directory):
    try:
        with open(os.path.join(directory, "config.json")) as f:
            config = json.load(f)
    except json.JSONDecodeError as error:
        raise ExportError(f"{directory}/config.json is not valid JSON: {error}") from error
    if not isinstance(config, dict) or config.get("format") != "flashtrain" \
            or config.get("format_version") != 1:
        raise ExportError(f"{directory}/config.json is not a flashtrain export of format "
                          "version 1 (format, format_version)")
    for key in ("vocab_size", "d_model", "n_heads", "head_dim"):
        _config_int(config, key, directory)
    for key in ("blocks", "tie_embeddings", "norm_eps"):
        if key not in config:
            raise ExportError(f"{directory}/config.json has no {key}")
    blocks = config["blocks"]
    if not isinstance(blocks, list) or not blocks:
        raise ExportError(f"{directory}/config.json: blocks must be a non-empty list of block "
                          f"kinds, got {blocks!r}")
    structure = config.get("structure", "residual")
    if structure not in STRUCTURES:
        raise ExportError(f"{directory}/config.json: structure is {structure!r}; "
                          f"flashtrain.load_export knows {', '.join(STRUCTURES)}")
    known = PLAIN_KINDS if structure == "plain" else BLOCK_KINDS
    for index, kind in enumerate(blocks):
        if kind not in known:
            raise ExportError(f"{directory}/config.json: block {index} is a {kind} block; "
                              f"a {structure} model has {', '.join(known)} blocks")
    if "transformer" in blocks and "rope_theta" not in config:
        raise ExportError(f"{directory}/config.json has no rope_theta (its model has "
                          "transformer blocks)")
    return config


def _layout(config, tensors, directory):
    """Per block the variant the tensors hold (feed-forward width, conv kernel, dense or
    block-diagonal wx, scan width), and every expected tensor name -> shape."""
    vocab, dim = config["vocab_size"], config["d_model"]
    heads, head_dim = config["n_heads"], config["head_dim"]
    plain = config.get("structure", "residual") == "plain"

    def need(name):
        if name not in tensors:
            raise ExportError(f"{directory}/model.safetensors has no {name}")
        return tensors[name]

    def dims(name, ndim):
        t = need(name)
        if t.dim() != ndim:
            raise ExportError(f"{name} has shape {_shape(t)}, but a {ndim}-D tensor is expected")
        return list(t.shape)

    expect = {"embedding.weight": [vocab, dim]}
    if not plain:
        expect["final_norm.weight"] = [dim]
    if not config["tie_embeddings"]:
        expect["head.weight"] = [vocab, dim]
    if plain and heads * head_dim != dim:
        raise ExportError(f"{directory}/config.json: a plain model needs n_heads x head_dim = "
                          f"d_model, got {heads} x {head_dim} != {dim}")
    layout = []
    for index, kind in enumerate(config["blocks"]):
        prefix = f"blocks.{index}."
        mixer = prefix + "mixer."
        part = {"ffn_hidden": 0}
        if not plain:
            expect[prefix + "mixer_norm.weight"] = [dim]
            if prefix + "ffn_norm.weight" in tensors or prefix + "ffn.gate.weight" in tensors:
                hidden = dims(prefix + "ffn.gate.weight", 2)[0]
                part["ffn_hidden"] = hidden
                expect[prefix + "ffn_norm.weight"] = [dim]
                expect[prefix + "ffn.gate.weight"] = [hidden, dim]
                expect[prefix + "ffn.up.weight"] = [hidden, dim]
                expect[prefix + "ffn.down.weight"] = [dim, hidden]
        if kind in ("lstm", "gru", "elman"):
            gates, bias_slots, _ = CELLS[kind]
            expect[mixer + "r"] = [gates, heads, head_dim, head_dim]
            expect[mixer + "b"] = [bias_slots, heads, head_dim]
            wx = need(mixer + "wx.weight")
            part["block_diagonal"] = wx.dim() == 3
            if wx.dim() == 3:
                if dim % heads:
                    raise ExportError(f"{mixer}wx.weight is block-diagonal {_shape(wx)}, but "
                                      f"d_model {dim} is not a multiple of n_heads {heads}")
                expect[mixer + "wx.weight"] = [heads, gates * head_dim, dim // heads]
            else:
                expect[mixer + "wx.weight"] = [gates * heads * head_dim, dim]
            if not plain:
                expect[mixer + "out_proj.weight"] = [dim, heads * head_dim]
        elif kind == "slstm":
            if heads * head_dim != dim:
                raise ExportError(f"{directory}/config.json: an slstm block needs n_heads x "
                                  f"head_dim = d_model, got {heads} x {head_dim} != {dim}")
            expect[mixer + "r"] = [4, heads, head_dim, head_dim]
            expect[mixer + "b"] = [4, heads, head_dim]
            for gate in "ifzo":
                expect[mixer + f"{gate}gate.weight"] = [heads, head_dim, head_dim]
            expect[mixer + "group_norm.weight"] = [dim]
            part["conv_kernel"] = 0
            if mixer + "conv.weight" in tensors or mixer + "conv.bias" in tensors:
                kernel = dims(mixer + "conv.weight", 3)[2]
                if kernel < 1:
                    raise ExportError(f"{mixer}conv.weight has shape "
                                      f"{_shape(tensors[mixer + 'conv.weight'])}: no kernel")
                part["conv_kernel"] = kernel
                expect[mixer + "conv.weight"] = [dim, 1, kernel]
                expect[mixer + "conv.bias"] = [dim]
        elif kind == "linear_scan":
            width = dims(mixer + "gate_bias", 1)[0]
            part["scan_width"] = width
            expect[mixer + "gate_bias"] = [width]
            expect[mixer + "in_proj.weight"] = [3 * width, dim]
            expect[mixer + "out_proj.weight"] = [dim, width]
        else:  # transformer
            if dim % heads or (dim // heads) % 2:
                raise ExportError(f"{directory}/config.json: a transformer block needs an even "
                                  f"head width d_model / n_heads, got {dim} / {heads}")
            for name in ("wq", "wk", "wv", "wo"):
                expect[mixer + f"{name}.weight"] = [dim, dim]
        layout.append(part)
    for name, shape in expect.items():
        got = _shape(need(name))
        if got != shape:
            raise ExportError(f"{name} has shape {got}, but config.json implies {shape}")
    unexpected = sorted(set(tensors) - set(expect))
    if unexpected:
        raise ExportError(f"{directory}/model.safetensors holds {', '.join(unexpected)}, which "
                          "the model that config.json describes has no place for")
    for name, t in tensors.items():
        if not t.is_floating_point():
            raise ExportError(f"{name} is {t.dtype}; an export holds floating-point tensors")
    return layout


def load_export(directory: Union[str, os.PathLike], device=None, dtype=None,
                backend: str = "auto") -> FlashtrainLM:
    """The model of a `flashtrain export` directory (config.json + model.safetensors) as a
    FlashtrainLM in eval mode, parameters in `dtype` (default: the export's float32) on
    `device` (default: the CPU). backend goes to flashtrain.flashrnn ("auto": the fastest
    that runs the case; CPU tensors run the vanilla backend).

    Every file manifest.json lists is checked against its size and checksum first, as the
    trainer checks its exports and checkpoints. A directory without manifest.json, a file
    that does not match it (a flipped bit, an edited config.json), or a malformed export (a
    missing file or key, an unknown block kind, a tensor missing, unexpected or of the
    wrong shape) raises ExportError, a ValueError naming the file.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    directory = os.fspath(directory)
    _verify_manifest(directory)
    config = _read_config(directory)
    try:
        tensors = load_file(os.path.join(directory, "model.safetensors"))
    except (SafetensorError, OSError) as error:
        raise ExportError(f"{directory}/model.safetensors cannot be read: {error}") from error
    layout = _layout(config, tensors, directory)
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(f"load_export: dtype must be a floating torch.dtype, got {dtype!r}")
    model = FlashtrainLM(config, layout, backend=backend)
    model.load_state_dict(tensors, strict=True)
    model.to(device=device, dtype=dtype if dtype is not None else torch.float32)
    return model.eval()
