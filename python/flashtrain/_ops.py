"""Autograd and fake (meta) kernels of the extension's ops.

The C++ library defines forward and backward as separate operators
(flashtrain::flashrnn_forward / flashrnn_backward, scan_forward / scan_backward);
here autograd ties each pair together and the fake kernels give output shapes
without running anything, which is what torch.compile and AOTAutograd need.
The forward keeps what its backward reads (R per head, of every step the
states the cell's backward reads and the cell's cache) as extra outputs, so a compiled graph saves them like
any activation.
"""
import functools

import torch

_ops = torch.ops.flashtrain


@functools.lru_cache(maxsize=None)
def cell_layout(cell: str):
    """(gates, biases, states, cache slots, saved states per step) of a cell;
    ValueError for an unknown one."""
    return tuple(_ops.cell_layout(cell))


def _compute_type(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


def _storage_type(wx, backend):
    """R per head and h_gemm are stored in the compute type on the vanilla backend
    (CPU tensors, float64, or backend='vanilla'), else in Wx's dtype."""
    if not wx.is_cuda or backend == "vanilla" or wx.dtype == torch.float64:
        return _compute_type(wx.dtype)
    return wx.dtype


# ---- the recurrent op ------------------------------------------------------


@torch.library.register_fake("flashtrain::flashrnn_forward")
def _flashrnn_forward_fake(Wx, R, b, initial_states, reset_mask, cell, backend,
                           gradient_recurrent_cut, gradient_recurrent_clip, forward_clip,
                           keep_for_backward):
    gates, _, states, cache, saved = cell_layout(cell)
    B, T, _, N, D = Wx.shape
    ct, st = _compute_type(Wx.dtype), _storage_type(Wx, backend)
    states_all = Wx.new_empty((states, B, T, N, D))
    last = Wx.new_empty((states, B, 1, N, D))
    if not keep_for_backward:
        def none(dtype):
            return Wx.new_empty((0,), dtype=dtype)
        return states_all, last, none(st), none(ct), none(ct), none(ct), none(st)
    return (states_all, last,
            Wx.new_empty((N, gates * D, D), dtype=st),
            Wx.new_empty((B, states, N, D), dtype=ct),
            Wx.new_empty((T, B, saved, N, D), dtype=ct),
            Wx.new_empty((T, B, cache, N, D), dtype=ct),
            Wx.new_empty((T, B, N, D), dtype=st))


@torch.library.register_fake("flashtrain::flashrnn_backward")
def _flashrnn_backward_fake(d_states_all, d_last_states, r_heads, s0, reset_mask, states, cache,
                            h_gemm, wx_type, r_type, b_type, biases, cell, backend,
                            gradient_recurrent_cut, gradient_recurrent_clip, forward_clip,
                            initial_type):
    T, B, _, N, D = states.shape
    S = s0.shape[1]
    G = r_heads.shape[1] // D
    return (states.new_empty((B, T, G, N, D), dtype=wx_type),
            states.new_empty((G, N, D, D), dtype=r_type),
            states.new_empty((biases, N, D), dtype=b_type),
            states.new_empty((S, B, 1, N, D), dtype=initial_type))


def _flashrnn_setup_context(ctx, inputs, output):
    (Wx, R, b, initial_states, reset_mask, cell, backend, cut, clip, forward_clip,
     keep) = inputs
    _, _, r_heads, s0, states, cache, h_gemm = output
    ctx.save_for_backward(r_heads, s0, states, cache, h_gemm, reset_mask)
    ctx.mark_non_differentiable(r_heads, s0, states, cache, h_gemm)
    ctx.set_materialize_grads(False)
    ctx.options = (Wx.dtype, R.dtype, b.dtype, b.shape[0], cell, backend, cut, clip, forward_clip)
    ctx.keep = keep
    ctx.initial_type = None if initial_states is None else initial_states.dtype


def _flashrnn_backward(ctx, d_states_all, d_last_states, *_):
    if not ctx.keep:
        raise RuntimeError("flashtrain: this flashrnn call ran without keeping what its "
                           "backward needs (keep_for_backward=False)")
    r_heads, s0, states, cache, h_gemm, reset_mask = ctx.saved_tensors
    wx_type, r_type, b_type, biases, cell, backend, cut, clip, forward_clip = ctx.options
    initial_type = ctx.initial_type if ctx.initial_type is not None else s0.dtype
    d_wx, d_r, d_b, d_initial = _ops.flashrnn_backward(
        d_states_all, d_last_states, r_heads, s0, reset_mask, states, cache, h_gemm, wx_type,
        r_type, b_type, biases, cell, backend, cut, clip, forward_clip, initial_type)
    if ctx.initial_type is None:
        d_initial = None
    return d_wx, d_r, d_b, d_initial, None, None, None, None, None, None, None


torch.library.register_autograd("flashtrain::flashrnn_forward", _flashrnn_backward,
                                setup_context=_flashrnn_setup_context)


# ---- the scan --------------------------------------------------------------


@torch.library.register_fake("flashtrain::scan_forward")
def _scan_forward_fake(a, b, x0, layout, reverse, backend):
    B = a.shape[0]
    D = a.shape[1] if layout == "bdt" else a.shape[2]
    return a.new_empty(a.shape), a.new_empty((B, D))


@torch.library.register_fake("flashtrain::scan_backward")
def _scan_backward_fake(a, x, x0, dx, dlast, layout, reverse, backend):
    dx0 = a.new_empty((0,)) if x0 is None else x0.new_empty(x0.shape)
    return a.new_empty(a.shape), a.new_empty(a.shape), dx0


def _scan_setup_context(ctx, inputs, output):
    a, b, x0, layout, reverse, backend = inputs
    x, _ = output
    ctx.save_for_backward(a, x, x0)
    ctx.set_materialize_grads(False)
    ctx.options = (layout, reverse, backend)
    ctx.has_x0 = x0 is not None


def _scan_backward(ctx, dx, dlast):
    a, x, x0 = ctx.saved_tensors
    layout, reverse, backend = ctx.options
    da, db, dx0 = _ops.scan_backward(a, x, x0, dx, dlast, layout, reverse, backend)
    return da, db, (dx0 if ctx.has_x0 else None), None, None, None


torch.library.register_autograd("flashtrain::scan_forward", _scan_backward,
                                setup_context=_scan_setup_context)
