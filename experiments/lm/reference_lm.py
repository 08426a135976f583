"""An independent reference of flashtrain's language models, in numpy.

Loads a `flashtrain export` directory (model.safetensors + config.json) and
computes the logits in float64 from the cell equations of docs/CELLS.md and the
block layout of models/README.md, without flashtrain's code: a check that the
export holds everything needed to run the model elsewhere, and that our op and
models compute what the documents say.

    python experiments/lm/reference_lm.py EXPORT_DIR --tokens 1,17,42
        prints the top next tokens after the sequence
    python experiments/lm/reference_lm.py EXPORT_DIR --tokens-file IN --output OUT
        IN: a safetensors file with "tokens" (integers, [batch, time]);
        OUT: a safetensors file with "logits" (float64, [batch, time, vocab])

Covers every block kind the models have: lstm, gru, elman and slstm (dense
or block-diagonal input projections, any number of heads, with or without the
feed-forward), linear_scan and transformer (rotary, causal attention), in any
mix, with a tied or untied head; and plain models ("structure": "plain"):
bare lstm, gru and elman layers, each passing h over its heads to the next,
and the head on the last h, without norms (an export without "structure" is
residual). Needs numpy and safetensors only. Exit
status: 0 done, 2 bad input or an unknown block kind, 77 numpy or safetensors
missing.
"""
import argparse
import json
import os
import sys

try:
    import numpy as np
    from safetensors.numpy import load_file, save_file
except ImportError as error:  # the C++ test skips on 77
    print(f"reference_lm.py needs numpy and safetensors: {error}", file=sys.stderr)
    sys.exit(77)

RECURRENT_BLOCKS = ("lstm", "gru", "elman", "slstm")
SUPPORTED_BLOCKS = RECURRENT_BLOCKS + ("linear_scan", "transformer")
PLAIN_LAYERS = ("lstm", "gru", "elman")
STRUCTURES = ("residual", "plain")


class ExportError(Exception):
    """The export is malformed or holds a model this reference does not cover."""


# --- elementwise functions and layers ------------------------------------------------

def sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # no overflow for large |x|


def log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def silu(x):
    return x * sigmoid(x)


def layer_norm(x, weight, eps):
    """LayerNorm over the last axis, no bias (xLSTM); weight None: none."""
    centred = x - x.mean(axis=-1, keepdims=True)
    normed = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + eps)
    return normed if weight is None else normed * weight


def rms_norm(x, weight, eps):
    """RMSNorm over the last axis (Llama)."""
    return x / np.sqrt((x**2).mean(axis=-1, keepdims=True) + eps) * weight


def linear(x, weight):
    """x @ weight.T, weight [out, in] (torch's Linear without bias)."""
    return x @ weight.T


def headwise(x, weight):
    """Per-head linear map: x [..., N*I], weight [N, O, I] -> [..., N*O]."""
    heads, _, per_head = weight.shape
    y = np.einsum("...ni,noi->...no", x.reshape(x.shape[:-1] + (heads, per_head)), weight)
    return y.reshape(y.shape[:-2] + (-1,))


def causal_depthwise_conv(x, weight, bias):
    """x [B, T, C]; weight [C, 1, K]; output t sees inputs t-K+1 .. t (zeros before 0)."""
    kernel = weight.shape[2]
    steps = x.shape[1]
    padded = np.concatenate([np.zeros((x.shape[0], kernel - 1, x.shape[2])), x], axis=1)
    out = np.broadcast_to(bias, x.shape).copy()
    for k in range(kernel):
        out += padded[:, k:k + steps, :] * weight[:, 0, k]
    return out


def rotary(x, theta):
    """Rotary positions, half-split pairs (GPT-NeoX form): x [B, T, H, hd], positions 0..T-1."""
    steps, dim = x.shape[1], x.shape[3]
    half = dim // 2
    angles = np.arange(steps)[:, None] * theta ** (-2.0 * np.arange(half) / dim)
    cos, sin = np.cos(angles)[None, :, None, :], np.sin(angles)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def causal_attention(q, k, v):
    """q, k, v [B, T, H, hd] -> [B, T, H, hd]: softmax(q k^T / sqrt(hd)) v over positions <= t."""
    scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(q.shape[-1])
    steps = q.shape[1]
    scores = np.where(np.tril(np.ones((steps, steps), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("bhts,bshd->bthd", weights, v)


def gated_feed_forward(x, p, prefix):
    gate = linear(x, p[prefix + "gate.weight"])
    up = linear(x, p[prefix + "up.weight"])
    return linear(silu(gate) * up, p[prefix + "down.weight"])


# --- the cells (docs/CELLS.md), one time step, per head -------------------------------
# Each takes the gate pre-activations without the recurrent term, wx [B, G, N, D],
# the recurrent matrices r [G, N, D, D], the biases b [Gb, N, D] and the states
# (a tuple of [B, N, D]), and returns the new states (h first).

def recurrent(r, h):
    """R_g h for every gate g: [B, G, N, D]."""
    return np.einsum("gnij,bnj->bgni", r, h)


def lstm_step(wx, r, b, states):
    h, c = states
    g = wx + recurrent(r, h) + b
    i, f, z, o = sigmoid(g[:, 0]), sigmoid(g[:, 1]), np.tanh(g[:, 2]), sigmoid(g[:, 3])
    c = f * c + i * z
    return o * np.tanh(c), c


def gru_step(wx, r, b, states):
    (h,) = states
    rh = recurrent(r, h)  # slots r, z, n; b holds r, z, n_input, n_recurrent
    reset = sigmoid(wx[:, 0] + rh[:, 0] + b[0])
    update = sigmoid(wx[:, 1] + rh[:, 1] + b[1])
    candidate = np.tanh(wx[:, 2] + b[2] + reset * (rh[:, 2] + b[3]))
    return ((1.0 - update) * candidate + update * h,)


def elman_step(wx, r, b, states):
    (h,) = states
    return (np.tanh(wx[:, 0] + recurrent(r, h)[:, 0] + b[0]),)


def slstm_step(wx, r, b, states):
    h, c, n, m = states
    g = wx + recurrent(r, h) + b
    i_pre, logf = g[:, 0], log_sigmoid(g[:, 1])
    z, o = np.tanh(g[:, 2]), sigmoid(g[:, 3])
    m_new = np.where(n == 0.0, i_pre, np.maximum(i_pre, logf + m))
    i_gate = np.minimum(np.exp(i_pre - m_new), 1.0)
    f_gate = np.minimum(np.exp(logf + m - m_new), 1.0)
    c = f_gate * c + i_gate * z
    n = np.maximum(1.0, f_gate * n + i_gate)
    return o * c / n, c, n, m_new


CELLS = {"lstm": (lstm_step, 2), "gru": (gru_step, 1), "elman": (elman_step, 1), "slstm": (slstm_step, 4)}


def run_cell(kind, wx, r, b):
    """wx [B, T, G, N, D] -> h [B, T, N, D], from zero initial states."""
    step, num_states = CELLS[kind]
    batch, steps, _, heads, dim = wx.shape
    states = tuple(np.zeros((batch, heads, dim)) for _ in range(num_states))
    hs = []
    for t in range(steps):
        states = step(wx[:, t], r, b, states)
        hs.append(states[0])
    return np.stack(hs, axis=1)


# --- blocks and the model (models/README.md) -------------------------------------------

class ReferenceLM:
    def __init__(self, config, params):
        self.config = config
        self.p = params
        self.blocks = list(config["blocks"])
        self.eps = float(config["norm_eps"])
        self.structure = config.get("structure", "residual")
        if self.structure not in STRUCTURES:
            raise ExportError(f"structure is {self.structure}; this reference covers {', '.join(STRUCTURES)}")
        supported = PLAIN_LAYERS if self.plain else SUPPORTED_BLOCKS
        for index, kind in enumerate(self.blocks):
            if kind not in supported:
                raise ExportError(f"block {index} is a {kind} block; this reference covers "
                                  f"{', '.join(supported)} blocks in a {self.structure} model")
        self.heads = int(config["n_heads"])
        self.head_dim = int(config["head_dim"])
        self._check_shapes()

    def _check_shapes(self):
        vocab, d_model = int(self.config["vocab_size"]), int(self.config["d_model"])
        expect = {"embedding.weight": (vocab, d_model)}
        if not self.plain:
            expect["final_norm.weight"] = (d_model,)
        if not self.config["tie_embeddings"]:
            expect["head.weight"] = (vocab, d_model)
        for index, kind in enumerate(self.blocks):
            if kind not in RECURRENT_BLOCKS:
                continue
            prefix = f"blocks.{index}.mixer."
            gates = 3 if kind == "gru" else 1 if kind == "elman" else 4
            expect[prefix + "r"] = (gates, self.heads, self.head_dim, self.head_dim)
        for name, shape in expect.items():
            if name not in self.p:
                raise ExportError(f"model.safetensors has no {name}")
            if tuple(self.p[name].shape) != shape:
                raise ExportError(f"{name} has shape {list(self.p[name].shape)}, but config.json "
                                  f"implies {list(shape)}")

    @property
    def plain(self):
        return self.structure == "plain"

    def gate_inputs(self, x, prefix, gates):
        """The recurrent blocks' input projection: [B, T, d] -> [B, T, G, N, D]."""
        weight = self.p[prefix + "wx.weight"]
        batch, steps = x.shape[:2]
        if weight.ndim == 2:  # dense, rows ordered (gate, head, unit)
            return linear(x, weight).reshape(batch, steps, gates, self.heads, self.head_dim)
        # block-diagonal [N, G*D, d/N]: output grouped by head
        y = headwise(x, weight).reshape(batch, steps, self.heads, gates, self.head_dim)
        return y.transpose(0, 1, 3, 2, 4)

    def recurrent_mixer(self, kind, x, prefix):
        """The cell's h over the heads [B, T, N*D], through out_proj unless the model is plain."""
        gates = self.p[prefix + "r"].shape[0]
        h = run_cell(kind, self.gate_inputs(x, prefix, gates), self.p[prefix + "r"], self.p[prefix + "b"])
        h = h.reshape(h.shape[:2] + (-1,))
        return h if self.plain else linear(h, self.p[prefix + "out_proj.weight"])

    def slstm_mixer(self, x, prefix):
        p = self.p
        x_conv = x
        if prefix + "conv.weight" in p:
            x_conv = silu(causal_depthwise_conv(x, p[prefix + "conv.weight"], p[prefix + "conv.bias"]))
        shape = x.shape[:2] + (self.heads, self.head_dim)
        wx = np.stack([headwise(x_conv, p[prefix + "igate.weight"]).reshape(shape),
                       headwise(x_conv, p[prefix + "fgate.weight"]).reshape(shape),
                       headwise(x, p[prefix + "zgate.weight"]).reshape(shape),
                       headwise(x, p[prefix + "ogate.weight"]).reshape(shape)], axis=2)
        h = run_cell("slstm", wx, p[prefix + "r"], p[prefix + "b"])  # [B, T, N, D]
        normed = layer_norm(h, None, self.eps)  # group norm: per head
        return normed.reshape(h.shape[:2] + (-1,)) * p[prefix + "group_norm.weight"]

    def linear_scan_mixer(self, x, prefix):
        p = self.p
        a_pre, v, gate = np.split(linear(x, p[prefix + "in_proj.weight"]), 3, axis=-1)
        a = sigmoid(a_pre + p[prefix + "gate_bias"])
        state = np.zeros(a.shape[:1] + a.shape[2:])
        states = []
        for t in range(x.shape[1]):  # x_t = a_t x_{t-1} + (1 - a_t) v_t
            state = a[:, t] * state + (1.0 - a[:, t]) * v[:, t]
            states.append(state)
        return linear(np.stack(states, axis=1) * silu(gate), p[prefix + "out_proj.weight"])

    def attention_mixer(self, x, prefix):
        p = self.p
        heads = self.heads
        shape = x.shape[:2] + (heads, x.shape[2] // heads)  # head_dim = d_model / n_heads
        theta = float(self.config["rope_theta"])
        q = rotary(linear(x, p[prefix + "wq.weight"]).reshape(shape), theta)
        k = rotary(linear(x, p[prefix + "wk.weight"]).reshape(shape), theta)
        v = linear(x, p[prefix + "wv.weight"]).reshape(shape)
        attended = causal_attention(q, k, v)
        return linear(attended.reshape(x.shape[:2] + (-1,)), p[prefix + "wo.weight"])

    def norm(self, kind, x, weight):
        """The Transformer block norms with RMSNorm, the others with LayerNorm (no bias)."""
        return rms_norm(x, weight, self.eps) if kind == "transformer" else layer_norm(x, weight, self.eps)

    def block(self, index, kind, x):
        prefix = f"blocks.{index}."
        if self.plain:  # a bare layer: x_l = h of the cell over x_{l-1}
            return self.recurrent_mixer(kind, x, prefix + "mixer.")
        normed = self.norm(kind, x, self.p[prefix + "mixer_norm.weight"])
        mixer = prefix + "mixer."
        if kind == "slstm":
            x = x + self.slstm_mixer(normed, mixer)
        elif kind == "linear_scan":
            x = x + self.linear_scan_mixer(normed, mixer)
        elif kind == "transformer":
            x = x + self.attention_mixer(normed, mixer)
        else:
            x = x + self.recurrent_mixer(kind, normed, mixer)
        if prefix + "ffn_norm.weight" in self.p:
            x = x + gated_feed_forward(self.norm(kind, x, self.p[prefix + "ffn_norm.weight"]), self.p,
                                       prefix + "ffn.")
        return x

    def logits(self, tokens):
        """tokens [B, T] integers -> logits [B, T, vocab], float64."""
        tokens = np.asarray(tokens)
        vocab = self.p["embedding.weight"].shape[0]
        if tokens.ndim != 2 or tokens.shape[1] < 1 or not np.issubdtype(tokens.dtype, np.integer):
            raise ExportError(f"tokens must be integers [batch, time >= 1], got {tokens.dtype} {list(tokens.shape)}")
        if tokens.min() < 0 or tokens.max() >= vocab:
            raise ExportError(f"token ids must lie in [0, {vocab}), got {int(tokens.min())}..{int(tokens.max())}")
        x = self.p["embedding.weight"][tokens]
        for index, kind in enumerate(self.blocks):
            x = self.block(index, kind, x)
        if not self.plain:
            x = self.norm(self.blocks[-1], x, self.p["final_norm.weight"])  # the last block's kind
        head = self.p["embedding.weight"] if self.config["tie_embeddings"] else self.p["head.weight"]
        return linear(x, head)


def load_export(directory):
    """The model of a flashtrain export directory, parameters in float64."""
    for name in ("config.json", "model.safetensors"):
        if not os.path.isfile(os.path.join(directory, name)):
            raise ExportError(f"{directory} has no {name}; expected a `flashtrain export` directory")
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    if config.get("format") != "flashtrain" or config.get("format_version") != 1:
        raise ExportError(f"{directory}/config.json is not a flashtrain export of format version 1")
    params = {name: tensor.astype(np.float64) for name, tensor in
              load_file(os.path.join(directory, "model.safetensors")).items()}
    return ReferenceLM(config, params)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("export_dir")
    parser.add_argument("--tokens", help="comma-separated token ids of one sequence")
    parser.add_argument("--tokens-file", help='safetensors file with "tokens" [batch, time]')
    parser.add_argument("--output", help='write "logits" [batch, time, vocab] (float64) here')
    args = parser.parse_args(argv)
    if (args.tokens is None) == (args.tokens_file is None):
        parser.error("give exactly one of --tokens and --tokens-file")
    try:
        model = load_export(args.export_dir)
        if args.tokens is not None:
            try:
                tokens = np.array([[int(t) for t in args.tokens.split(",")]], dtype=np.int64)
            except ValueError:
                raise ExportError(f"--tokens needs comma-separated integers, got '{args.tokens}'")
        else:
            tensors = load_file(args.tokens_file)
            if "tokens" not in tensors:
                raise ExportError(f"{args.tokens_file} has no tensor named tokens")
            tokens = tensors["tokens"]
        logits = model.logits(tokens)
    except ExportError as error:
        print(f"reference_lm.py: {error}", file=sys.stderr)
        return 2
    if args.output:
        save_file({"logits": np.ascontiguousarray(logits)}, args.output)
    else:
        last = logits[0, -1]
        top = np.argsort(-last)[:5]
        print("next token (id: logit): " + ", ".join(f"{int(t)}: {last[t]:.4f}" for t in top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
