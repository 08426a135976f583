#include "headwise_gates.h"

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/autograd.h>

namespace flashtrain::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kGates = 4;

// [B, T, N·D] -> heads first [N, BT, D]: a strided view (row stride N·D).
torch::Tensor heads_first(const torch::Tensor& x, int64_t heads) {
  return x.view({-1, heads, x.size(-1) / heads}).transpose(0, 1);
}

// Gate g of Wx [B, T, 4, N, D] heads first [N, BT, D]: a strided view (row stride 4·N·D).
torch::Tensor gate_heads_first(const torch::Tensor& wx, int64_t g) {
  return wx.flatten(0, 1).select(1, g).transpose(0, 1);
}

class HeadwiseGateProjection : public torch::autograd::Function<HeadwiseGateProjection> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x_if, const torch::Tensor& x_zo,
                               const torch::Tensor& weights) {
    // The GEMMs' out= forms write into strided views; autocast does not apply
    // to them (the weights are cast here).
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t heads = weights.size(1), d = weights.size(2);
    const torch::Tensor w = weights.to(x_if.scalar_type());
    const torch::Tensor sources[2] = {heads_first(x_if.contiguous(), heads), heads_first(x_zo.contiguous(), heads)};
    torch::Tensor wx = at::empty({x_if.size(0), x_if.size(1), kGates, heads, d}, x_if.options());
    for (int64_t g = 0; g < kGates; ++g) {
      torch::Tensor out = gate_heads_first(wx, g);
      at::bmm_out(out, sources[g / 2], w[g].transpose(1, 2));
    }
    ctx->save_for_backward({sources[0], sources[1], w});
    ctx->saved_data["weights_type"] = int64_t(weights.scalar_type());
    return wx;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& w = saved[2];
    const torch::Tensor d_wx = grads[0].to(w.scalar_type()).contiguous();
    const int64_t heads = w.size(1), d = w.size(2), rows = saved[0].size(1);
    torch::Tensor d_sources[2];
    torch::Tensor d_weights = at::empty_like(w);
    for (int64_t s = 0; s < 2; ++s) {
      // [BT, N·D] laid out as the input was; heads first for the GEMMs.
      d_sources[s] = at::empty({rows, heads * d}, d_wx.options());
      torch::Tensor d_heads = heads_first(d_sources[s], heads);
      for (int64_t g = 2 * s; g < 2 * s + 2; ++g) {
        const torch::Tensor dy = gate_heads_first(d_wx, g);  // [N, BT, D_out]
        if (g == 2 * s) at::bmm_out(d_heads, dy, w[g]);
        else d_heads.baddbmm_(dy, w[g]);
        torch::Tensor d_w = d_weights[g];
        at::bmm_out(d_w, dy.transpose(1, 2), saved[s]);  // [N, D_out, BT] x [N, BT, D_in]
      }
    }
    const auto shape = d_wx.sizes();
    const auto weights_type = static_cast<at::ScalarType>(ctx->saved_data["weights_type"].toInt());
    return {d_sources[0].view({shape[0], shape[1], heads * d}), d_sources[1].view({shape[0], shape[1], heads * d}),
            d_weights.to(weights_type)};
  }
};

}  // namespace

torch::Tensor headwise_gate_projection(const torch::Tensor& x_if, const torch::Tensor& x_zo,
                                       const torch::Tensor& weights) {
  TORCH_CHECK(weights.dim() == 4 && weights.size(0) == kGates && weights.size(2) == weights.size(3),
              "headwise_gate_projection: weights must be [4, N, D, D], got ", weights.sizes());
  const int64_t width = weights.size(1) * weights.size(2);
  TORCH_CHECK(x_if.dim() == 3 && x_if.size(2) == width && x_zo.sizes() == x_if.sizes() &&
                  x_zo.scalar_type() == x_if.scalar_type(),
              "headwise_gate_projection: x_if and x_zo must both be [B, T, ", width, "] of one dtype, got ",
              x_if.sizes(), " and ", x_zo.sizes());
  return HeadwiseGateProjection::apply(x_if, x_zo, weights);
}

}  // namespace flashtrain::models
