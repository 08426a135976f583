#include "fused/fused_backend.h"

#include <cstdint>
#include <iterator>
#include <type_traits>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "cells/registry.h"
#include "cuda_storage.h"
#include "fused/fused_launch.h"
#include "fused/tc_selection.h"
#include "fused/tc_tiling.h"
#include "step_params.h"

namespace flashrnn::fused {
namespace {

void check(cudaError_t status, const char* what) { check_launch(status, "fused", what); }

int64_t max_shared_memory(const at::Device& device) {
  return int64_t(at::cuda::getDeviceProperties(device.index())->sharedMemPerBlockOptin);
}

TcStorage tc_storage(at::ScalarType type) {
  return type == at::kBFloat16 ? TcStorage::kBf16 : type == at::kHalf ? TcStorage::kFp16
                                                                       : TcStorage::kFp32;
}

// The tuner's decision for the case on the tensors' device (computed once per
// device, cell, storage type and head dim).
const tune::TcSelection& selection(Cell cell, const at::Device& device, at::ScalarType type,
                                   int64_t d) {
  const int index = device.has_index() ? device.index() : at::cuda::current_device();
  return tc_selection(index, cell, tc_storage(type), d);
}

// Calls fn(integral_constant<int, D>) when d is one of kTcHeadDims.
template <size_t I = 0, class Fn>
bool dispatch_tc_head_dim(int64_t d, Fn&& fn) {
  if constexpr (I == std::size(kTcHeadDims)) {
    return false;
  } else {
    if (d != kTcHeadDims[I]) return dispatch_tc_head_dim<I + 1>(d, fn);
    fn(std::integral_constant<int, kTcHeadDims[I]>{});
    return true;
  }
}

// Calls fn(CellType{}, integral_constant<int, D>{}, cluster) and returns true
// when the tensor-core kernel of the direction (`backward` or the forward)
// takes the case: the tuner's model of their tiling finds that it fits the
// device (tc_tiling.txt: bf16/fp16, a compiled head dim, threads, registers,
// shared memory, the cluster of CTAs per head; a wide head's backward with
// Rᵀ partly in shared memory), and T < 2^31 (they count steps in 32 bits). They launch
// with the compiled tiling of the tuner's cluster: the same model solved at
// build time without the device's limits (tc_tiling.h), which the device's
// own solution must agree with (asserted here).
template <class S, class Fn>
bool dispatch_tc(Cell cell, const at::Device& device, int64_t steps, int64_t d, bool backward, Fn&& fn) {
  if constexpr (std::is_same_v<S, float>) {
    return false;
  } else {
    if (steps >= (int64_t(1) << 31)) return false;
    const at::ScalarType type = std::is_same_v<S, __half> ? at::kHalf : at::kBFloat16;
    const tune::TcSelection& s = selection(cell, device, type, d);
    if (!s.config || (backward && !s.config->backward)) return false;
    bool taken = false;
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      dispatch_tc_head_dim(d, [&](auto head_dim) {
        constexpr int D = decltype(head_dim)::value;
        const bool agrees = with_tc_cluster<C, D>(s.config->cluster, [&](auto cluster) {
          using Fw = TcForward<C, S, D, decltype(cluster)::value>;
          using Bw = TcBackward<C, S, D, decltype(cluster)::value>;
          return s.config->threads == Fw::Tiling::kThreads && s.config->backward &&
                 s.config->backward_threads == Bw::kThreads &&
                 s.config->forward_smem_bytes == Fw::smem_bytes() &&
                 s.config->backward_smem_bytes == Bw::smem_bytes();
        }, false);
        TORCH_INTERNAL_ASSERT(agrees, "flashrnn: the tuner's tensor-core tiling disagrees with the kernels' (",
                              tune::describe(*s.config), ")");
        // Each architecture's code holds only the tiling its devices run
        // (tc_forward_kernel: sm_90 and later always have clusters).
        const int index = device.has_index() ? device.index() : at::cuda::current_device();
        TORCH_INTERNAL_ASSERT(tc_tiling_runs<C>(D, s.config->cluster,
                                             at::cuda::getDeviceProperties(index)->major >= 9),
                              "flashrnn: the tuner chose the tiling over ", s.config->cluster,
                              " CTAs, which this device's architecture does not compile");
        fn(c, head_dim, s.config->cluster);
        taken = true;
      });
    });
    TORCH_INTERNAL_ASSERT(taken, "flashrnn: the tuner runs the tensor-core kernels for head dim ", d,
                          ", which has no compiled instance");
    return taken;
  }
}

// Whether the tensor-core kernel of the direction takes the case.
bool tc_takes(Cell cell, const at::Device& device, at::ScalarType type, int64_t steps, int64_t d,
              bool backward) {
  if (type != at::kBFloat16 && type != at::kHalf) return false;
  return dispatch_storage(type, [&](auto s) {
    return dispatch_tc<decltype(s)>(cell, device, steps, d, backward, [](auto, auto, int) {});
  });
}

// The tensor-core kernels copy rows of D in 16-byte chunks (cp.async): every
// row must start 16-byte aligned, else they read an aligned copy.
at::Tensor rows_aligned(const at::Tensor& t) {
  bool aligned = reinterpret_cast<uintptr_t>(t.const_data_ptr()) % 16 == 0;
  for (int64_t i = 0; i + 1 < t.dim(); ++i) aligned = aligned && t.stride(i) * t.element_size() % 16 == 0;
  return aligned ? t : t.clone(at::MemoryFormat::Contiguous);
}

template <class S>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const c10::cuda::CUDAGuard guard(in.wx.device());
  const at::ScalarType st = in.wx.scalar_type();
  const bool tc = tc_takes(problem.cell, in.wx.device(), st, in.wx.size(1), in.wx.size(4), false);
  // The tensor-core kernels keep the state on chip: with no backward to come
  // they write only the user's output, and the per-step buffers get no memory.
  const bool inference = tc && !problem.keep_for_backward;
  Saved saved = allocate_forward(problem, in, at::kFloat, st, /*per_step_buffers=*/!inference);
  const at::Tensor wx = rows_aligned(rows_contiguous(in.wx));
  const at::Tensor bias = in.b.to(st).contiguous();
  ForwardResult result = allocate_outputs(problem, in);
  // The FMA kernels carry the states through memory, the tensor-core ones on chip.
  const at::Tensor running = tc ? at::Tensor() : at::empty_like(saved.s0);
  auto p = forward_params<float, S>(problem, saved, wx, bias, at::Tensor(), running, result.states_all,
                                    result.last_states);
  if (inference) {  // null buffers select the inference kernels (tc_launch_forward)
    p.states.ptr = nullptr;
    p.cache.ptr = nullptr;
    p.h_gemm.ptr = nullptr;
  }
  const S* r_heads = static_cast<const S*>(saved.r_heads.const_data_ptr());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  if (tc) {
    dispatch_tc<S>(problem.cell, in.wx.device(), in.wx.size(1), in.wx.size(4), false,
                   [&](auto c, auto d, int cluster) {
      check(tc_launch_forward<decltype(c), S, decltype(d)::value>(p, r_heads, cluster, stream),
            "tensor-core forward kernel");
    });
  } else {
    cells::dispatch_cell(problem.cell, [&](auto c) {
      check(launch_forward<decltype(c), S>(p, r_heads, stream), "forward kernel");
    });
  }
  result.saved = saved;
  return result;
}

template <class S>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const c10::cuda::CUDAGuard guard(saved.states.device());
  const at::Device device = saved.states.device();
  const int64_t steps = saved.states.size(0), d = saved.states.size(4);
  TORCH_INTERNAL_ASSERT(tc_takes(problem.cell, device, saved.wx_type, steps, d, true) ||
                            !tc_takes(problem.cell, device, saved.wx_type, steps, d, false),
                        "flashrnn: the fused backward called for a case whose backward is the alternating one");
  BackwardTensors b = allocate_backward(saved, grads, saved.wx_type, 1);
  if (b.d_states.defined()) b.d_states = rows_aligned(b.d_states);
  const auto p = backward_params<float, S>(problem, saved, b);
  const S* r_heads = static_cast<const S*>(saved.r_heads.const_data_ptr());
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  const bool tc = dispatch_tc<S>(problem.cell, device, steps, d, true, [&](auto c, auto head_dim, int cluster) {
    using C = decltype(c);
    constexpr int D = decltype(head_dim)::value;
    // A wide head may stream Rᵀ from a packed copy (TcBackward::kStreams): its scratch.
    const int64_t streamed_bytes = with_tc_cluster<C, D>(cluster, [&](auto q) {
      return TcBackward<C, S, D, decltype(q)::value>::streamed_bytes_per_head();
    }, int64_t(0)) * saved.r_heads.size(0);
    const at::Tensor r_streamed =
        streamed_bytes > 0 ? at::empty({streamed_bytes}, saved.r_heads.options().dtype(at::kByte)) : at::Tensor();
    check(tc_launch_backward<C, S, D>(p, r_heads, r_streamed.defined() ? r_streamed.data_ptr() : nullptr, cluster,
                                      stream),
          "tensor-core backward kernel");
  });
  if (!tc)
    cells::dispatch_cell(problem.cell, [&](auto c) {
      check(launch_backward<decltype(c), S>(p, r_heads, stream), "backward kernel");
    });
  return {b.d_wx, recurrent_weight_gradient(saved, b.d_rh), b.d_bias.sum(0).to(saved.b_type),
          b.d_s0};
}

}  // namespace

bool uses_tensor_cores(Cell cell, const Inputs& in) {
  return in.wx.is_cuda() &&
         tc_takes(cell, in.wx.device(), in.wx.scalar_type(), in.wx.size(1), in.wx.size(4), false);
}

bool auto_picks(Cell cell, const Inputs& in) {
  if (uses_tensor_cores(cell, in)) return true;
  return in.wx.is_cuda() && in.wx.scalar_type() == at::kFloat && in.wx.size(4) <= kFmaAutoMaxHeadDim &&
         unsupported_reason(cell, in).empty();
}

bool runs_backward(Cell cell, const Inputs& in) {
  const at::ScalarType t = in.wx.scalar_type();
  const int64_t steps = in.wx.size(1), d = in.wx.size(4);
  return !(tc_takes(cell, in.wx.device(), t, steps, d, false) && !tc_takes(cell, in.wx.device(), t, steps, d, true));
}

std::string tensor_core_reason(Cell cell, const Inputs& in) {
  if (!in.wx.is_cuda()) return "the tensor-core kernels run on CUDA tensors only";
  const at::ScalarType t = in.wx.scalar_type();
  if (!is_cuda_storage_type(t))
    return "the tensor-core kernels take bfloat16 and float16, not " + std::string(c10::toString(t));
  if (in.wx.size(1) >= (int64_t(1) << 31)) return "the tensor-core kernels take T < 2^31 steps";
  const tune::TcSelection& s = selection(cell, in.wx.device(), t, in.wx.size(4));
  return s.config ? "" : s.reason;
}

std::string unsupported_reason(Cell cell, const Inputs& in) {
  if (!in.wx.is_cuda()) return "the fused backend runs on CUDA tensors only";
  const at::ScalarType t = in.wx.scalar_type();
  if (!is_cuda_storage_type(t))
    return "the fused backend takes bfloat16, float16 and float32, not " +
           std::string(c10::toString(t));
  if (uses_tensor_cores(cell, in)) return "";
  const int64_t d = in.wx.size(4);
  const CellLayout l = cell_layout(cell);
  const std::string why = unsupported_head_dim(l.gates, l.states, d, at::elementSize(t),
                                               max_shared_memory(in.wx.device()));
  return why.empty() ? "" : "the fused backend cannot run head dimension " + std::to_string(d) +
                                " in " + std::string(c10::toString(t)) + ": " + why +
                                "; the tensor-core kernels: " + tensor_core_reason(cell, in);
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
