#include "fused/fused_backend.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "cells/registry.h"
#include "cuda_storage.h"
#include "fused/fused_launch.h"
#include "step_params.h"

namespace flashrnn::fused {
namespace {

void check(cudaError_t status, const char* what) { check_launch(status, "fused", what); }

template <class S>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const c10::cuda::CUDAGuard guard(in.wx.device());
  const at::ScalarType st = in.wx.scalar_type();
  Saved saved = allocate_forward(problem, in, at::kFloat, st);
  const at::Tensor wx = rows_contiguous(in.wx);
  const at::Tensor bias = in.b.to(st).contiguous();
  at::Tensor states_all = at::empty(
      {saved.states.size(2), in.wx.size(0), in.wx.size(1), in.wx.size(3), in.wx.size(4)},
      in.wx.options());
  const auto p = forward_params<float, S>(problem, saved, wx, bias, at::Tensor(), states_all);
  const S* r_heads = static_cast<const S*>(saved.r_heads.const_data_ptr());
  cells::dispatch_cell(problem.cell, [&](auto c) {
    check(launch_forward<decltype(c), S>(p, r_heads, at::cuda::getCurrentCUDAStream()),
          "forward kernel");
  });
  return {states_all, saved};
}

template <class S>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const c10::cuda::CUDAGuard guard(saved.states.device());
  BackwardTensors b = allocate_backward(saved, grads, saved.wx_type, 1);
  const auto p = backward_params<float, S>(problem, saved, b);
  const S* r_heads = static_cast<const S*>(saved.r_heads.const_data_ptr());
  cells::dispatch_cell(problem.cell, [&](auto c) {
    check(launch_backward<decltype(c), S>(p, r_heads, at::cuda::getCurrentCUDAStream()),
          "backward kernel");
  });
  return {b.d_wx, recurrent_weight_gradient(saved, b.d_rh), b.d_bias.sum(0).to(saved.b_type),
          b.d_s0};
}

}  // namespace

std::string unsupported_reason(Cell cell, const Inputs& in) {
  if (!in.wx.is_cuda()) return "the fused backend runs on CUDA tensors only";
  const at::ScalarType t = in.wx.scalar_type();
  if (!is_cuda_storage_type(t))
    return "the fused backend takes bfloat16, float16 and float32, not " +
           std::string(c10::toString(t));
  const int64_t d = in.wx.size(4);
  const CellLayout l = cell_layout(cell);
  const int64_t max_smem =
      at::cuda::getDeviceProperties(in.wx.device().index())->sharedMemPerBlockOptin;
  const std::string why =
      unsupported_head_dim(l.gates, l.states, d, at::elementSize(t), max_smem);
  return why.empty() ? "" : "the fused backend cannot run head dimension " + std::to_string(d) +
                                " in " + std::string(c10::toString(t)) + ": " + why;
}

ForwardResult forward(const Problem& problem, const Inputs& in) {
  return dispatch_storage(in.wx.scalar_type(), [&](auto s) {
    return forward_typed<decltype(s)>(problem, in);
  });
}

Gradients backward(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  return dispatch_storage(saved.wx_type, [&](auto s) {
    return backward_typed<decltype(s)>(problem, saved, grads);
  });
}

}  // namespace flashrnn::fused
