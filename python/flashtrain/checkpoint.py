"""Our checkpoints in PyTorch: a `flashtrain export` directory as an nn.Module.

    model = flashtrain.load_export("outputs/run/export/step_00001000", dtype=torch.float64)
    logits = model(tokens)                                  # [B, T] -> [B, T, vocab]
    tokens = model.generate(prompt, max_new_tokens=64)      # carrying each block's state

The math is that of models/README.md (the C++ models) and of the independent numpy
reference experiments/lm/reference_lm.py: the recurrent mixers run on flashtrain.flashrnn
(backend "auto"; CPU tensors run the vanilla backend), the linear-scan mixer on
flashtrain.scan, the Transformer blocks on plain torch (rotary + causal attention).
The modules' parameter names are the export's keys, so model.state_dict() is the export.
"""
import json
import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn.functional as F
from torch import nn

from ._recurrent import flashrnn
from ._scan import scan

RECURRENT_KINDS = ("lstm", "gru", "elman", "slstm")
BLOCK_KINDS = RECURRENT_KINDS + ("linear_scan", "transformer")
PLAIN_KINDS = ("lstm", "gru", "elman")
STRUCTURES = ("residual", "plain")
# The op's gates G, bias slots Gb and states S per cell (docs/CELLS.md).
CELLS = {"lstm": (4, 4, 2), "gru": (3, 4, 1), "elman": (1, 1, 1), "slstm": (4, 4, 4)}


MANIFEST = "manifest.json"


class ExportError(ValueError):
    """A malformed `flashtrain export` directory (a ValueError)."""


def _shape(t) -> List[int]:
    return list(t.shape)


# --- layers -------------------------------------------------------------------------------

class _Weight(nn.Module):
    """A module holding one parameter named `weight` (norms, head-wise projections)."""

    def __init__(self, shape: Sequence[int]):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(*shape))


class LayerNorm(_Weight):
    """LayerNorm over the last axis with a weight and no bias (xLSTM)."""

    def __init__(self, dim: int, eps: float):
        super().__init__((dim,))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, None, self.eps)


class RMSNorm(_Weight):
    """RMSNorm over the last axis (Llama): x / sqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim: int, eps: float):
        super().__init__((dim,))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


class HeadwiseLinear(_Weight):
    """Per-head linear map: x [..., N*I], weight [N, O, I] -> [..., N*O] (block-diagonal)."""

    def __init__(self, heads: int, out_per_head: int, in_per_head: int):
        super().__init__((heads, out_per_head, in_per_head))

    def forward(self, x):
        heads, _, per_head = self.weight.shape
        y = torch.einsum("...ni,noi->...no", x.unflatten(-1, (heads, per_head)), self.weight)
        return y.flatten(-2)


class FeedForward(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


# --- mixers: forward(x [B, T, d], state or None) -> (y [B, T, d'], new state) --------------

class RecurrentMixer(nn.Module):
    """lstm / gru / elman: Wx = wx(x) -> the op with r, b -> h over the heads -> out_proj
    (no out_proj in a plain model). State: {"states": [S, B, 1, N, D]}, O(1)."""

    def __init__(self, kind, dim, heads, head_dim, block_diagonal, plain, backend):
        super().__init__()
        gates, bias_slots, _ = CELLS[kind]
        self.kind, self.heads, self.head_dim, self.gates = kind, heads, head_dim, gates
        self.backend = backend
        if block_diagonal:
            self.wx = HeadwiseLinear(heads, gates * head_dim, dim // heads)
        else:
            self.wx = nn.Linear(dim, gates * heads * head_dim, bias=False)
        self.r = nn.Parameter(torch.empty(gates, heads, head_dim, head_dim))
        self.b = nn.Parameter(torch.empty(bias_slots, heads, head_dim))
        self.out_proj = None if plain else nn.Linear(heads * head_dim, dim, bias=False)

    def gate_inputs(self, x):
        batch, steps = x.shape[:2]
        y = self.wx(x)
        if isinstance(self.wx, HeadwiseLinear):  # grouped by head: [B, T, N, G, D]
            return y.view(batch, steps, self.heads, self.gates, self.head_dim).transpose(2, 3)
        return y.view(batch, steps, self.gates, self.heads, self.head_dim)  # rows (gate, head, unit)

    def forward(self, x, state):
        initial = None if state is None else state["states"]
        states, last = flashrnn(self.gate_inputs(x).contiguous(), self.r, self.b, states=initial,
                                function=self.kind, backend=self.backend)
        h = states[0].flatten(-2)  # [B, T, N*D]
        y = h if self.out_proj is None else self.out_proj(h)
        return y, {"states": last}


class SlstmMixer(nn.Module):
    """xLSTM's sLSTM layer: causal depthwise conv + SiLU feeding the i and f gates, z and o
    from the input, head-wise gate projections, the sLSTM op, per-head LayerNorm.
    State: {"states": [4, B, 1, N, D], "conv_window": [B, K-1, d]} (the last K-1 inputs), O(1)."""

    def __init__(self, dim, heads, head_dim, conv_kernel, eps, backend):
        super().__init__()
        self.heads, self.head_dim, self.eps, self.backend = heads, head_dim, eps, backend
        self.conv_kernel = conv_kernel
        if conv_kernel > 0:
            self.conv = nn.Conv1d(dim, dim, conv_kernel, groups=dim, bias=True)
        else:
            self.conv = None
        per_head = dim // heads
        self.igate = HeadwiseLinear(heads, head_dim, per_head)
        self.fgate = HeadwiseLinear(heads, head_dim, per_head)
        self.zgate = HeadwiseLinear(heads, head_dim, per_head)
        self.ogate = HeadwiseLinear(heads, head_dim, per_head)
        self.r = nn.Parameter(torch.empty(4, heads, head_dim, head_dim))
        self.b = nn.Parameter(torch.empty(4, heads, head_dim))
        self.group_norm = _Weight((heads * head_dim,))

    def forward(self, x, state):
        new_state = {}
        x_conv = x
        if self.conv is not None:
            kernel = self.conv_kernel
            if state is None:
                window = x.new_zeros(x.shape[0], kernel - 1, x.shape[2])
            else:
                window = state["conv_window"]
            padded = torch.cat([window, x], dim=1)  # [B, K-1+T, d]: zeros before the start
            conv = F.conv1d(padded.transpose(1, 2), self.conv.weight, self.conv.bias,
                            groups=x.shape[2])
            x_conv = F.silu(conv.transpose(1, 2))
            new_state["conv_window"] = padded[:, padded.shape[1] - (kernel - 1):]
        shape = x.shape[:2] + (self.heads, self.head_dim)
        wx = torch.stack([self.igate(x_conv).view(shape), self.fgate(x_conv).view(shape),
                          self.zgate(x).view(shape), self.ogate(x).view(shape)], dim=2)
        initial = None if state is None else state["states"]
        states, last = flashrnn(wx.contiguous(), self.r, self.b, states=initial,
                                function="slstm", backend=self.backend)
        h = states[0]  # [B, T, N, D]
        normed = F.layer_norm(h, (self.head_dim,), None, None, self.eps)  # per head
        new_state["states"] = last
        return normed.flatten(-2) * self.group_norm.weight, new_state


class LinearScanMixer(nn.Module):
    """[a~, v, g] = in_proj(x), a = sigmoid(a~ + gate_bias), x_t = a_t x_{t-1} + (1 - a_t) v_t
    (flashtrain.scan), out_proj(x_t * silu(g_t)). State: {"x": [B, H]}, O(1)."""

    def __init__(self, dim, hidden, backend):
        super().__init__()
        self.gate_bias = nn.Parameter(torch.empty(hidden))
        self.in_proj = nn.Linear(dim, 3 * hidden, bias=False)
        self.out_proj = nn.Linear(hidden, dim, bias=False)
        self.backend = "vanilla" if backend == "vanilla" else "auto"

    def forward(self, x, state):
        a_pre, v, gate = self.in_proj(x).chunk(3, dim=-1)
        a = torch.sigmoid(a_pre + self.gate_bias)
        x0 = None if state is None else state["x"]
        xs, last = scan(a.contiguous(), ((1.0 - a) * v).contiguous(), x0=x0, layout="btd",
                        backend=self.backend, return_last=True)
        return self.out_proj(xs * F.silu(gate)), {"x": last}


def _rotary(x, positions, theta):
    """Half-split (GPT-NeoX) rotary: x [B, T, H, hd] at absolute positions [T]."""
    dim = x.shape[-1]
    half = dim // 2
    inv = theta ** (-2.0 * torch.arange(half, dtype=torch.float64, device=x.device) / dim)
    angles = positions.to(torch.float64)[:, None] * inv  # float64, then x's dtype
    cos = torch.cos(angles).to(x.dtype)[None, :, None, :]
    sin = torch.sin(angles).to(x.dtype)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class AttentionMixer(nn.Module):
    """Llama attention: wq, wk, wv, wo without biases, rotary positions, causal softmax
    attention. State: the KV cache {"keys", "values": [B, H, tokens so far, hd]}, which
    grows with the sequence (not O(1))."""

    def __init__(self, dim, heads, theta):
        super().__init__()
        self.heads, self.theta = heads, theta
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, state):
        batch, steps, dim = x.shape
        shape = (batch, steps, self.heads, dim // self.heads)
        past = 0 if state is None else state["keys"].shape[2]
        positions = torch.arange(past, past + steps, device=x.device)
        q = _rotary(self.wq(x).view(shape), positions, self.theta).transpose(1, 2)
        k = _rotary(self.wk(x).view(shape), positions, self.theta).transpose(1, 2)
        v = self.wv(x).view(shape).transpose(1, 2)  # [B, H, T, hd]
        if state is not None:
            k = torch.cat([state["keys"], k], dim=2)
            v = torch.cat([state["values"], v], dim=2)
        # query i (position past + i) sees keys 0 .. past + i
        mask = torch.ones(steps, past + steps, dtype=torch.bool, device=x.device).tril(past)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        y = self.wo(attended.transpose(1, 2).reshape(batch, steps, dim))
        return y, {"keys": k, "values": v}


# --- blocks and the model ------------------------------------------------------------------

class Block(nn.Module):
    """Pre-norm residual block: h = x + mixer(mixer_norm(x)); y = h + ffn(ffn_norm(h))."""

    def __init__(self, kind, mixer, dim, eps, ffn_hidden):
        super().__init__()
        norm = RMSNorm if kind == "transformer" else LayerNorm
        self.kind = kind
        self.mixer_norm = norm(dim, eps)
        self.mixer = mixer
        if ffn_hidden:
            self.ffn_norm = norm(dim, eps)
            self.ffn = FeedForward(dim, ffn_hidden)
        else:
            self.ffn_norm = self.ffn = None

    def forward(self, x, state):
        y, state = self.mixer(self.mixer_norm(x), state)
        x = x + y
        if self.ffn is not None:
            x = x + self.ffn(self.ffn_norm(x))
        return x, state


class PlainLayer(nn.Module):
    """A bare recurrent layer of a plain model: x_l = h of the cell over x_{l-1}."""

    def __init__(self, mixer):
        super().__init__()
        self.mixer = mixer

    def forward(self, x, state):
        return self.mixer(x, state)


@dataclass
class GenerationState:
    """What generation carries between calls: per block a dict of tensors (see the
    mixers), and the number of tokens seen so far."""
    blocks: List[Optional[Dict[str, torch.Tensor]]] = field(default_factory=list)
    position: int = 0


class FlashtrainLM(nn.Module):
    """A flashtrain language model (models/README.md) loaded from a `flashtrain export`.

    forward(tokens [B, T]) -> logits [B, T, vocab]. forward_with_state(tokens, state) runs a
    chunk of tokens from a GenerationState (None: the start) and returns the logits and the
    new state; generate() uses it. Build it with load_export().
    """

    def __init__(self, config: dict, layout: dict, backend: str = "auto"):
        super().__init__()
        self.config = config
        self.structure = config.get("structure", "residual")
        self.kinds = list(config["blocks"])
        dim, heads, head_dim = config["d_model"], config["n_heads"], config["head_dim"]
        eps = float(config["norm_eps"])
        self.embedding = nn.Embedding(config["vocab_size"], dim)
        blocks = []
        for index, kind in enumerate(self.kinds):
            part = layout[index]
            if self.plain:
                blocks.append(PlainLayer(RecurrentMixer(kind, dim, heads, head_dim,
                                                        part["block_diagonal"], True, backend)))
                continue
            if kind == "slstm":
                mixer = SlstmMixer(dim, heads, head_dim, part["conv_kernel"], eps, backend)
            elif kind == "linear_scan":
                mixer = LinearScanMixer(dim, part["scan_width"], backend)
            elif kind == "transformer":
                mixer = AttentionMixer(dim, heads, float(config["rope_theta"]))
            else:
                mixer = RecurrentMixer(kind, dim, heads, head_dim, part["block_diagonal"], False,
                                       backend)
            blocks.append(Block(kind, mixer, dim, eps, part["ffn_hidden"]))
        self.blocks = nn.ModuleList(blocks)
        if self.plain:
            self.final_norm = None
        else:
            last = self.kinds[-1]
            self.final_norm = RMSNorm(dim, eps) if last == "transformer" else LayerNorm(dim, eps)
        self.tie_embeddings = bool(config["tie_embeddings"])
        self.head = None if self.tie_embeddings else nn.Linear(dim, config["vocab_size"], bias=False)

    @property
    def plain(self) -> bool:
        return self.structure == "plain"

    @property
    def vocab_size(self) -> int:
        return self.embedding.weight.shape[0]

    def _check_tokens(self, tokens):
        if not isinstance(tokens, torch.Tensor):
            tokens = torch.as_tensor(tokens)
        if tokens.dim() != 2 or tokens.shape[1] < 1 or tokens.is_floating_point() \
                or tokens.is_complex() or tokens.dtype == torch.bool:
            raise ValueError(f"tokens must be integers [batch, time >= 1], got {tokens.dtype} "
                             f"{_shape(tokens)}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got {low}..{high}")
        return tokens.to(device=self.embedding.weight.device, dtype=torch.long)

    def forward_with_state(self, tokens, state: Optional[GenerationState] = None
                           ) -> Tuple[torch.Tensor, GenerationState]:
        """tokens [B, T] after `state` (None: from the start) -> (logits [B, T, vocab],
        the state after them). Chunks of any length: feeding a sequence in pieces gives
        the logits of feeding it whole."""
        tokens = self._check_tokens(tokens)
        x = self.embedding(tokens)
        previous = state.blocks if state is not None else [None] * len(self.blocks)
        new_blocks = []
        for block, block_state in zip(self.blocks, previous):
            x, block_state = block(x, block_state)
            new_blocks.append(block_state)
        if self.final_norm is not None:
            x = self.final_norm(x)
        head = self.embedding.weight if self.head is None else self.head.weight
        position = (0 if state is None else state.position) + tokens.shape[1]
        return F.linear(x, head), GenerationState(new_blocks, position)

    def forward(self, tokens) -> torch.Tensor:
        """tokens [B, T] integers -> logits [B, T, vocab]."""
        return self.forward_with_state(tokens)[0]

    @torch.no_grad()
    def generate(self, prompt_tokens, max_new_tokens: int, temperature: float = 0.0,
                 seed: Optional[int] = None, stop_token: Optional[int] = None,
                 return_logits: bool = False):
        """Continue prompt_tokens ([T], [B, T] or a list of ints) by max_new_tokens tokens.

        The prompt is fed once; then one token at a time, carrying each block's state:
        lstm / gru / elman their cell states [S, B, 1, N, D], slstm its cell states and the
        causal conv's last K-1 inputs, linear_scan its last scan state [B, H] — fixed size,
        O(1) per token — and transformer blocks a KV cache that grows with the sequence.
        temperature 0 picks the argmax (greedy), else samples softmax(logits / temperature)
        (seed: a torch.Generator seeded with it; None: torch's global generator).
        stop_token: a row stops after producing it (later positions of a stopped row hold
        stop_token); generation ends when every row has stopped.
        Returns the tokens [B, T + new] (a 1-D prompt gives [T + new]) and, with
        return_logits, also the logits each new token was chosen from [B, new, vocab].
        """
        prompt = torch.as_tensor(prompt_tokens)
        one_row = prompt.dim() == 1
        if one_row:
            prompt = prompt[None]
        if max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        prompt = self._check_tokens(prompt)
        generator = None
        if seed is not None and temperature > 0:
            generator = torch.Generator(device=prompt.device).manual_seed(int(seed))
        out, chosen_logits = [prompt], []
        stopped = torch.zeros(prompt.shape[0], dtype=torch.bool, device=prompt.device)
        logits, state = self.forward_with_state(prompt)
        for i in range(max_new_tokens):
            last = logits[:, -1]
            if temperature > 0:
                probs = torch.softmax(last.double() / temperature, dim=-1)
                token = torch.multinomial(probs, 1, generator=generator)[:, 0]
            else:
                token = last.argmax(dim=-1)
            if stop_token is not None:
                token = torch.where(stopped, torch.full_like(token, stop_token), token)
                stopped |= token == stop_token
            out.append(token[:, None])
            chosen_logits.append(last)
            if i + 1 == max_new_tokens or (stop_token is not None and bool(stopped.all())):
                break
            logits, state = self.forward_with_state(token[:, None], state)
        tokens = torch.cat(out, dim=1)
        if one_row:
            tokens = tokens[0]
        if not return_logits:
            return tokens
        if chosen_logits:
            scores = torch.stack(chosen_logits, dim=1)
        else:
            scores = logits.new_zeros(prompt.shape[0], 0, self.vocab_size)
        return tokens, scores


# --- loading -------------------------------------------------------------------------------

def _config_int(config, key, directory, minimum=1):
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ExportError(f"{directory}/config.json: {key} must be an integer >= {minimum}, "
                          f"got {value!r}")
    return value


def _fnv1a64_of_file(path) -> str:
    """The checksum manifest.json records for a file: FNV-1a (64 bit) as 16 hex digits,
    computed by the trainer's own code (trainer/src/checksum.cpp, in the extension)."""
    if not hasattr(torch.ops.flashtrain, "fnv1a64_of_file"):
        raise ImportError("flashtrain: the extension predates load_export's manifest check "
                          "(no fnv1a64_of_file); rebuild it (cmake --build build --target "
                          "flashtrain_torch) and reinstall the package")
    return torch.ops.flashtrain.fnv1a64_of_file(os.fspath(path))


def _verify_manifest(directory):
    """Checks every file manifest.json lists against its size and checksum, as the trainer
    does before it reads an export or a checkpoint (trainer/src/staged_directory.cpp,
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
