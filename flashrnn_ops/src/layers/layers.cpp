// The ATen side of flashrnn/layers.h: checks, the autograd functions, the
// reference compositions and the dispatch to the kernels of layer_kernels.cu.
#include "flashrnn/layers.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/core/DeviceGuard.h>
#include <torch/autograd.h>

#include <cstdint>
#include <optional>
#include <string>

#include "cuda_storage.h"
#include "layers/layer_launch.h"
#include "validate.h"  // shape_of

namespace flashrnn {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The kernels run CUDA float32 / bfloat16 / float16 of the shapes they take;
// the reference runs the rest.
bool on_kernel_device(const at::Tensor& x) { return x.is_cuda() && is_cuda_storage_type(x.scalar_type()); }

// Dense and aligned for the kernels' loads of value pairs (a view may start
// at an odd element).
at::Tensor pair_aligned(const at::Tensor& t) {
  at::Tensor dense = t.contiguous();
  const auto address = reinterpret_cast<std::uintptr_t>(dense.const_data_ptr());
  return address % (2 * dense.element_size()) == 0 ? dense : dense.clone();
}

// Reads a tensor as the kernels' T (float weights are float already: no copy).
template <class T>
const T* data_as(const at::Tensor& t) { return reinterpret_cast<const T*>(t.const_data_ptr()); }
template <class T>
T* mutable_data_as(at::Tensor& t) { return reinterpret_cast<T*>(t.mutable_data_ptr()); }

// ---- headwise norm ----

void check_headwise_norm(const at::Tensor& x, const at::Tensor& weight, int64_t num_heads) {
  if (!x.defined() || x.dim() < 1) throw InputError("headwise_norm: x must have a last dimension H·D, got none");
  const int64_t width = x.size(-1);
  if (num_heads < 1 || width % num_heads != 0) {
    throw InputError("headwise_norm: num_heads " + std::to_string(num_heads) +
                     " must be positive and divide x's last dimension, x is " + shape_of(x));
  }
  if (!weight.defined() || weight.dim() != 1 || weight.size(0) != width) {
    throw InputError("headwise_norm: weight must be [" + std::to_string(width) + "] (x's last dimension), got " +
                     shape_of(weight));
  }
  if (weight.device() != x.device()) throw InputError("headwise_norm: weight and x are on different devices");
}

layers::HeadwiseNormShape headwise_shape(const at::Tensor& x, int64_t num_heads) {
  const int64_t width = x.size(-1);
  return {x.numel() / (width / num_heads), int(num_heads), int(width / num_heads)};
}

// The (input, output) types the norm kernels are instantiated for: one
// storage type, or float32 in and bf16 / fp16 out.
bool norm_kernels_take(at::ScalarType x_type, at::ScalarType out_type) {
  return out_type == x_type ||
         (x_type == at::kFloat && (out_type == at::kBFloat16 || out_type == at::kHalf));
}

// Calls fn(T{}, Out{}) with the kernels' types of x and of the output.
template <class Fn>
void dispatch_norm_types(at::ScalarType x_type, at::ScalarType out_type, Fn&& fn) {
  TORCH_CHECK(norm_kernels_take(x_type, out_type), "headwise_norm: no kernel from ", x_type, " to ", out_type);
  if (out_type == x_type) return dispatch_storage(x_type, [&](auto t) { fn(t, t); });
  dispatch_storage(out_type, [&](auto out) { fn(float{}, out); });
}

// The norm on the kernels, plain (delta undefined) or in its residual form:
// the forward normalises x (or x + delta, returned as sum) into out_type.
struct NormForward {
  at::Tensor sum, y, mean, rstd;
};

NormForward norm_forward(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& w, int64_t num_heads,
                         double eps, at::ScalarType out_type) {
  const layers::HeadwiseNormShape shape = headwise_shape(x, num_heads);
  NormForward f;
  f.sum = delta.defined() ? at::empty_like(x) : x;
  f.y = at::empty(x.sizes(), x.options().dtype(out_type));
  f.mean = at::empty({shape.rows}, x.options().dtype(at::kFloat));
  f.rstd = at::empty({shape.rows}, x.options().dtype(at::kFloat));
  if (shape.rows == 0) return f;
  dispatch_norm_types(x.scalar_type(), out_type, [&](auto t, auto out) {
    using T = decltype(t);
    using Out = decltype(out);
    const layers::NormResidual<const Out*, T*> residual =
        delta.defined() ? layers::NormResidual<const Out*, T*>{data_as<Out>(delta), mutable_data_as<T>(f.sum)}
                        : layers::NormResidual<const Out*, T*>{};
    check_launch(layers::launch_headwise_norm_forward<T, Out>(data_as<T>(x), residual, w.const_data_ptr<float>(),
                                                              mutable_data_as<Out>(f.y), f.mean.mutable_data_ptr<float>(),
                                                              f.rstd.mutable_data_ptr<float>(), shape, float(eps),
                                                              at::cuda::getCurrentCUDAStream()),
                 "layers", "headwise_norm forward");
  });
  return f;
}

// The backward from dy (out_type) and what the forward kept (x: what it
// normalised). Residual form: d_sum (undefined: none) is added, and the
// total also goes to d_delta in out_type.
struct NormBackward {
  at::Tensor dx, d_delta, d_weight;
};

NormBackward norm_backward(const at::Tensor& x, const at::Tensor& dy, bool residual, const at::Tensor& d_sum,
                           const at::Tensor& w, const at::Tensor& mean, const at::Tensor& rstd, int64_t num_heads,
                           at::ScalarType out_type, at::ScalarType weight_type) {
  const layers::HeadwiseNormShape shape = headwise_shape(x, num_heads);
  NormBackward g;
  g.dx = at::empty_like(x);
  if (residual) g.d_delta = at::empty(x.sizes(), x.options().dtype(out_type));
  at::Tensor partial;
  dispatch_norm_types(x.scalar_type(), out_type, [&](auto t, auto out) {
    using T = decltype(t);
    using Out = decltype(out);
    const int chunks = layers::headwise_norm_weight_chunks<T, Out>(shape, residual);
    // Every chunk's sums are written by the kernel: no zero fill (and no chunk for no rows).
    partial = at::empty({chunks, shape.heads * shape.head_dim}, x.options().dtype(at::kFloat));
    if (shape.rows == 0) return;
    const layers::NormResidual<Out*, const T*> into =
        residual ? layers::NormResidual<Out*, const T*>{mutable_data_as<Out>(g.d_delta),
                                                        d_sum.defined() ? data_as<T>(d_sum) : nullptr}
                 : layers::NormResidual<Out*, const T*>{};
    check_launch(layers::launch_headwise_norm_backward<T, Out>(
                     data_as<T>(x), data_as<Out>(dy), w.const_data_ptr<float>(), mean.const_data_ptr<float>(),
                     rstd.const_data_ptr<float>(), into, mutable_data_as<T>(g.dx), partial.mutable_data_ptr<float>(),
                     shape, chunks, at::cuda::getCurrentCUDAStream()),
                 "layers", "headwise_norm backward");
  });
  g.d_weight = partial.sum(0).to(weight_type);
  return g;
}

class HeadwiseNormFunction : public torch::autograd::Function<HeadwiseNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& weight,
                            int64_t num_heads, double eps, int64_t out_type_code) {
    const c10::DeviceGuard guard(x_in.device());
    const at::Tensor x = pair_aligned(x_in);
    const at::Tensor w = pair_aligned(weight.to(at::kFloat));
    const NormForward f = norm_forward(x, at::Tensor(), w, num_heads, eps, static_cast<at::ScalarType>(out_type_code));
    ctx->save_for_backward({x, w, f.mean, f.rstd});
    ctx->saved_data["num_heads"] = num_heads;
    ctx->saved_data["out_type"] = out_type_code;
    ctx->saved_data["weight_type"] = int64_t(weight.scalar_type());
    return f.y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const c10::DeviceGuard guard(saved[0].device());
    const auto out_type = static_cast<at::ScalarType>(ctx->saved_data["out_type"].toInt());
    const NormBackward g = norm_backward(
        saved[0], pair_aligned(grads[0].to(out_type)), /*residual=*/false, at::Tensor(), saved[1], saved[2], saved[3],
        ctx->saved_data["num_heads"].toInt(), out_type,
        static_cast<at::ScalarType>(ctx->saved_data["weight_type"].toInt()));
    return {g.dx, g.d_weight, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// ---- residual addition + headwise norm ----

void check_residual(const at::Tensor& x, const at::Tensor& delta) {
  if (!delta.defined()) return;
  if (delta.sizes() != x.sizes())
    throw InputError("residual_add_norm: delta must have x's shape " + shape_of(x) + ", got " + shape_of(delta));
  if (delta.device() != x.device()) throw InputError("residual_add_norm: x and delta are on different devices");
}

class ResidualAddNormFunction : public torch::autograd::Function<ResidualAddNormFunction> {
 public:
  // delta has the output's dtype (residual_add_norm checks).
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& delta_in,
                               const at::Tensor& weight, int64_t num_heads, double eps) {
    const c10::DeviceGuard guard(x_in.device());
    const at::Tensor delta = pair_aligned(delta_in);
    const at::Tensor w = pair_aligned(weight.to(at::kFloat));
    const NormForward f = norm_forward(pair_aligned(x_in), delta, w, num_heads, eps, delta.scalar_type());
    ctx->save_for_backward({f.sum, w, f.mean, f.rstd});
    ctx->saved_data["num_heads"] = num_heads;
    ctx->saved_data["out_type"] = int64_t(delta.scalar_type());
    ctx->saved_data["weight_type"] = int64_t(weight.scalar_type());
    // An unused sum (the last norm of a model) or output gets no gradient
    // tensor of zeros: the backward reads undefined as zero.
    ctx->set_materialize_grads(false);
    return {f.sum, f.y};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& sum = saved[0];
    const c10::DeviceGuard guard(sum.device());
    const auto out_type = static_cast<at::ScalarType>(ctx->saved_data["out_type"].toInt());
    const at::Tensor d_sum = grads[0].defined() ? pair_aligned(grads[0].to(sum.scalar_type())) : at::Tensor();
    if (!grads[1].defined()) {  // the normalised rows reached no loss: the sum's gradient is the total
      const at::Tensor total = d_sum.defined() ? d_sum : at::zeros_like(sum);
      return {total, total.to(out_type), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const NormBackward g = norm_backward(
        sum, pair_aligned(grads[1].to(out_type)), /*residual=*/true, d_sum, saved[1], saved[2], saved[3],
        ctx->saved_data["num_heads"].toInt(), out_type,
        static_cast<at::ScalarType>(ctx->saved_data["weight_type"].toInt()));
    return {g.dx, g.d_delta, g.d_weight, at::Tensor(), at::Tensor()};
  }
};

// ---- silu(gate) · up ----

void check_silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  if (!gate.defined() || !up.defined() || gate.sizes() != up.sizes())
    throw InputError("silu_mul: gate and up must have one shape, got " + shape_of(gate) + " and " + shape_of(up));
  if (gate.scalar_type() != up.scalar_type() || gate.device() != up.device())
    throw InputError("silu_mul: gate and up must have one dtype and device");
}

class SiluMulFunction : public torch::autograd::Function<SiluMulFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gate_in, const at::Tensor& up_in) {
    const c10::DeviceGuard guard(gate_in.device());
    const at::Tensor gate = pair_aligned(gate_in), up = pair_aligned(up_in);
    at::Tensor y = at::empty_like(gate);
    if (gate.numel() > 0) {
      dispatch_storage(gate.scalar_type(), [&](auto t) {
        using T = decltype(t);
        check_launch(layers::launch_silu_mul_forward<T>(data_as<T>(gate), data_as<T>(up), mutable_data_as<T>(y),
                                                        gate.numel() / 2, at::cuda::getCurrentCUDAStream()),
                     "layers", "silu_mul forward");
      });
    }
    ctx->save_for_backward({gate, up});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &gate = saved[0], &up = saved[1];
    const c10::DeviceGuard guard(gate.device());
    const at::Tensor dy = pair_aligned(grads[0].to(gate.scalar_type()));
    at::Tensor d_gate = at::empty_like(gate), d_up = at::empty_like(up);
    if (gate.numel() > 0) {
      dispatch_storage(gate.scalar_type(), [&](auto t) {
        using T = decltype(t);
        check_launch(layers::launch_silu_mul_backward<T>(data_as<T>(gate), data_as<T>(up), data_as<T>(dy),
                                                         mutable_data_as<T>(d_gate), mutable_data_as<T>(d_up),
                                                         gate.numel() / 2, at::cuda::getCurrentCUDAStream()),
                     "layers", "silu_mul backward");
      });
    }
    return {d_gate, d_up};
  }
};

// ---- causal convolution + SiLU ----

// weight [C, K] or [C, 1, K] -> [C, K].
at::Tensor conv_taps(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (!x.defined() || x.dim() != 3) {
    throw InputError("causal_conv_silu: x must be [batch, time, channels], got " + shape_of(x));
  }
  const int64_t channels = x.size(2);
  const bool conv1d_layout = weight.defined() && weight.dim() == 3 && weight.size(1) == 1;
  const at::Tensor taps = conv1d_layout ? weight.squeeze(1) : weight;
  if (!taps.defined() || taps.dim() != 2 || taps.size(0) != channels || taps.size(1) < 1) {
    throw InputError("causal_conv_silu: weight must be [" + std::to_string(channels) + ", K] or [" +
                     std::to_string(channels) + ", 1, K] (x has " + std::to_string(channels) + " channels), got " +
                     shape_of(weight));
  }
  if (!bias.defined() || bias.dim() != 1 || bias.size(0) != channels) {
    throw InputError("causal_conv_silu: bias must be [" + std::to_string(channels) + "], got " + shape_of(bias));
  }
  if (weight.device() != x.device() || bias.device() != x.device())
    throw InputError("causal_conv_silu: x, weight and bias must be on one device");
  return taps;
}

layers::CausalConvShape conv_shape(const at::Tensor& x, const at::Tensor& taps) {
  return {x.size(0), x.size(1), int(x.size(2)), int(taps.size(1))};
}

class CausalConvSiluFunction : public torch::autograd::Function<CausalConvSiluFunction> {
 public:
  // taps [C, K] (conv_taps checked them; autograd carries their gradient
  // back to the caller's weight).
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in, const at::Tensor& taps,
                            const at::Tensor& bias) {
    const c10::DeviceGuard guard(x_in.device());
    const at::Tensor x = pair_aligned(x_in);
    const at::Tensor w = taps.to(at::kFloat).contiguous(), b = bias.to(at::kFloat).contiguous();
    const layers::CausalConvShape shape = conv_shape(x, taps);
    at::Tensor y = at::empty_like(x);
    if (x.numel() > 0) {
      dispatch_storage(x.scalar_type(), [&](auto t) {
        using T = decltype(t);
        check_launch(layers::launch_causal_conv_silu_forward<T>(data_as<T>(x), w.const_data_ptr<float>(),
                                                                b.const_data_ptr<float>(), mutable_data_as<T>(y),
                                                                shape, at::cuda::getCurrentCUDAStream()),
                     "layers", "causal_conv_silu forward");
      });
    }
    ctx->save_for_backward({x, w, b});
    ctx->saved_data["weight_type"] = int64_t(taps.scalar_type());
    ctx->saved_data["bias_type"] = int64_t(bias.scalar_type());
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &w = saved[1], &b = saved[2];
    const c10::DeviceGuard guard(x.device());
    const at::Tensor dy = pair_aligned(grads[0].to(x.scalar_type()));
    const layers::CausalConvShape shape = conv_shape(x, w);
    const int chunks = layers::causal_conv_param_chunks(shape);
    at::Tensor dx = at::empty_like(x);
    // Every tile's sums are written by the kernel: no zero fill.
    at::Tensor partial = at::empty({chunks, shape.kernel + 1, shape.channels}, x.options().dtype(at::kFloat));
    if (x.numel() > 0) {
      dispatch_storage(x.scalar_type(), [&](auto t) {
        using T = decltype(t);
        check_launch(layers::launch_causal_conv_silu_backward<T>(
                         data_as<T>(x), data_as<T>(dy), w.const_data_ptr<float>(), b.const_data_ptr<float>(),
                         mutable_data_as<T>(dx), partial.mutable_data_ptr<float>(), shape, chunks,
                         at::cuda::getCurrentCUDAStream()),
                     "layers", "causal_conv_silu backward");
      });
    }
    const at::Tensor sums = partial.sum(0);  // [K + 1, C]
    const at::Tensor d_taps =
        sums.narrow(0, 0, shape.kernel).t().to(static_cast<at::ScalarType>(ctx->saved_data["weight_type"].toInt()));
    const at::Tensor d_bias =
        sums[shape.kernel].to(static_cast<at::ScalarType>(ctx->saved_data["bias_type"].toInt()));
    return {dx, d_taps, d_bias};
  }
};

}  // namespace

at::Tensor headwise_norm_reference(const at::Tensor& x, const at::Tensor& weight, int64_t num_heads,
                                   double eps, std::optional<at::ScalarType> out_dtype) {
  check_headwise_norm(x, weight, num_heads);
  const at::ScalarType compute = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::ScalarType out = out_dtype.value_or(x.scalar_type());
  if (num_heads == 1)  // a plain layer norm: ATen's fused one, weight included
    return at::layer_norm(x.to(compute), {x.size(-1)}, weight.to(compute), /*bias=*/{}, eps).to(out);
  std::vector<int64_t> heads_shape = x.sizes().vec();
  heads_shape.back() = num_heads;
  heads_shape.push_back(x.size(-1) / num_heads);
  const at::Tensor heads = x.to(compute).reshape(heads_shape);
  const at::Tensor normed = at::layer_norm(heads, {heads_shape.back()}, /*weight=*/{}, /*bias=*/{}, eps);
  return (normed.flatten(-2) * weight.to(compute)).to(out);
}

at::Tensor headwise_norm(const at::Tensor& x, const at::Tensor& weight, int64_t num_heads, double eps,
                         std::optional<at::ScalarType> out_dtype) {
  check_headwise_norm(x, weight, num_heads);
  const at::ScalarType out_type = out_dtype.value_or(x.scalar_type());
  if (!on_kernel_device(x) || !norm_kernels_take(x.scalar_type(), out_type) ||
      !layers::headwise_norm_kernels_take(headwise_shape(x, num_heads)))
    return headwise_norm_reference(x, weight, num_heads, eps, out_dtype);
  return HeadwiseNormFunction::apply(x, weight, num_heads, eps, int64_t(out_type));
}

ResidualNorm residual_add_norm(const at::Tensor& x, const at::Tensor& delta, const at::Tensor& weight,
                               int64_t num_heads, double eps, std::optional<at::ScalarType> out_dtype) {
  check_headwise_norm(x, weight, num_heads);
  check_residual(x, delta);
  if (!delta.defined()) return {x, headwise_norm(x, weight, num_heads, eps, out_dtype)};
  const at::ScalarType out_type = out_dtype.value_or(x.scalar_type());
  if (!on_kernel_device(x) || delta.scalar_type() != out_type || !norm_kernels_take(x.scalar_type(), out_type) ||
      !layers::headwise_norm_kernels_take(headwise_shape(x, num_heads))) {
    const at::Tensor sum = x + delta;
    return {sum, headwise_norm(sum, weight, num_heads, eps, out_dtype)};
  }
  const variable_list out = ResidualAddNormFunction::apply(x, delta, weight, num_heads, eps);
  return {out[0], out[1]};
}

at::Tensor silu_mul_reference(const at::Tensor& gate, const at::Tensor& up) {
  check_silu_mul(gate, up);
  return at::silu(gate) * up;
}

at::Tensor silu_mul(const at::Tensor& gate, const at::Tensor& up) {
  check_silu_mul(gate, up);
  if (!on_kernel_device(gate) || gate.numel() % 2 != 0) return silu_mul_reference(gate, up);
  return SiluMulFunction::apply(gate, up);
}

at::Tensor causal_conv_silu_reference(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  const at::Tensor taps = conv_taps(x, weight, bias);
  const int64_t kernel = taps.size(1);
  const at::ScalarType compute = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  // Channels first, K − 1 zeros in front: output t sees inputs t − K + 1 .. t.
  const at::Tensor padded = at::constant_pad_nd(x.to(compute).transpose(1, 2), {kernel - 1, 0});
  const int64_t stride[] = {1}, padding[] = {0}, dilation[] = {1};
  const at::Tensor y = at::conv1d(padded, taps.to(compute).unsqueeze(1), bias.to(compute), stride, padding,
                                  dilation, /*groups=*/x.size(2));
  return at::silu(y).transpose(1, 2).to(x.scalar_type());
}

at::Tensor causal_conv_silu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  const at::Tensor taps = conv_taps(x, weight, bias);
  if (!on_kernel_device(x) || !layers::causal_conv_kernels_take(conv_shape(x, taps)))
    return causal_conv_silu_reference(x, weight, bias);
  return CausalConvSiluFunction::apply(x, taps, bias);
}

}  // namespace flashrnn
