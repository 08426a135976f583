#include "alternating/alternating_backend.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "alternating/captured_loop.h"
#include "alternating/recurrent_gemm.h"
#include "cells/registry.h"
#include "tensor_slots.h"

namespace flashrnn::alternating {
namespace {

template <class S> constexpr cudaDataType kCudaType = CUDA_R_32F;
template <> constexpr cudaDataType kCudaType<__nv_bfloat16> = CUDA_R_16BF;
template <> constexpr cudaDataType kCudaType<__half> = CUDA_R_16F;

// Calls fn(S{}) with the storage type of `type`.
template <class Fn>
decltype(auto) dispatch_storage(at::ScalarType type, Fn&& fn) {
  switch (type) {
    case at::kBFloat16: return fn(__nv_bfloat16{});
    case at::kHalf: return fn(__half{});
    case at::kFloat: return fn(float{});
    default: break;
  }
  TORCH_CHECK(false, "flashrnn alternating: unsupported dtype ", type);
}

// The tensor itself if its last dim is contiguous, else a contiguous copy.
at::Tensor rows_contiguous(const at::Tensor& t) {
  return t.size(-1) == 1 || t.stride(-1) == 1 ? t : t.contiguous();
}

void check(cudaError_t status, const char* what) {
  TORCH_CHECK(status == cudaSuccess, "flashrnn alternating: ", what, " failed: ",
              cudaGetErrorString(status));
}

// Device memory of one loop: its args and the GEMM pointer arrays.
template <class Args>
struct DeviceMemory {
  at::Tensor storage;
  DeviceSlots<Args> slots;

  DeviceMemory(const Extent& x, int64_t entries, c10::Device device) {
    const int64_t args_bytes = (int64_t(sizeof(Args)) + 255) / 256 * 256;
    const int64_t pointers = (2 + x.steps) * entries;
    storage = at::empty({args_bytes + pointers * 8}, at::TensorOptions(at::kByte).device(device));
    char* base = static_cast<char*>(storage.data_ptr());
    slots.args = reinterpret_cast<Args*>(base);
    auto** ptrs = reinterpret_cast<const void**>(base + args_bytes);
    slots.gemm.a = ptrs;
    slots.gemm.c = const_cast<void**>(ptrs + entries);
    slots.gemm.b = ptrs + 2 * entries;
  }
};

// A captured loop with its device memory, cached per shape and stream.
template <class Args>
struct Plan {
  DeviceMemory<Args> memory;
  std::unique_ptr<CapturedLoop> loop;
};

using PlanKey = std::tuple<int /*direction*/, int64_t /*stream*/, int /*cell*/, int /*dtype*/,
                           int64_t, int64_t, int64_t, int64_t, int64_t, bool /*cut*/>;

// Runs enqueue(stream, slots, args): replayed from a cached graph, or directly
// when the caller's stream is itself being captured (graphs do not nest).
template <class Args, class Enqueue>
void run_loop(const PlanKey& key, const Args& args, c10::Device device, const Enqueue& enqueue) {
  static std::mutex mutex;
  static std::map<PlanKey, std::shared_ptr<void>> plans;
  const Extent& x = args.step.extent;
  const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device.index());

  cudaStreamCaptureStatus capturing;
  check(cudaStreamIsCapturing(stream.stream(), &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone) {
    DeviceMemory<Args> memory(x, args.operands.entries, device);  // stays the capture pool's
    enqueue(stream, memory.slots, args);
    return;
  }

  std::lock_guard<std::mutex> lock(mutex);
  constexpr size_t kMaxPlans = 64;  // each holds a graph of 2·T nodes
  if (plans.size() >= kMaxPlans && !plans.count(key)) plans.clear();
  std::shared_ptr<void>& entry = plans[key];
  if (!entry) {
    auto plan = std::make_shared<Plan<Args>>(
        Plan<Args>{DeviceMemory<Args>(x, args.operands.entries, device), nullptr});
    const DeviceSlots<Args> slots = plan->memory.slots;
    plan->loop = std::make_unique<CapturedLoop>(
        [&](c10::cuda::CUDAStream side) { enqueue(side, slots, args); }, device.index());
    entry = plan;
  }
  auto& plan = *std::static_pointer_cast<Plan<Args>>(entry);
  Args by_value = args;
  DeviceSlots<Args> slots = plan.memory.slots;
  void* kernel_args[] = {&by_value, &slots};  // the setup kernel's parameters
  plan.loop->replay(kernel_args, stream.stream());
}

template <class S>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const c10::Device device = in.wx.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = in.wx.size(0), steps = in.wx.size(1), G = in.wx.size(2);
  const int64_t N = in.wx.size(3), D = in.wx.size(4);
  const int num_states = cell_layout(problem.cell).states;
  const auto f32 = in.wx.options().dtype(at::kFloat);
  const at::ScalarType st = in.wx.scalar_type();

  Saved saved;
  saved.wx_type = st;
  saved.r_type = in.r.scalar_type();
  saved.b_type = in.b.scalar_type();
  saved.biases = in.b.size(0);
  saved.r_heads = heads_major(in.r, st);
  saved.s0 = initial_states_internal(in, num_states, at::kFloat);
  saved.reset = in.reset;
  saved.states = at::empty({steps, B, num_states, N, D}, f32);
  saved.cache = at::empty({steps, B, cache_slots(problem.cell), N, D}, f32);
  saved.h_gemm = at::empty({steps, B, N, D}, in.wx.options());
  const at::Tensor wx = rows_contiguous(in.wx);
  const at::Tensor bias = in.b.contiguous();
  const at::Tensor rh = at::empty({N, B, G, D}, f32);
  at::Tensor states_all = at::empty({num_states, B, steps, N, D}, in.wx.options());

  ForwardArgs<S> args;
  ForwardStepParams<float, S>& p = args.step;
  p.extent = {steps, B, N, D};
  p.wx = slots<const S>(wx, 1, 0, 2, 3);
  p.rh = slots<const float>(rh, kBroadcast, 1, 2, 0);
  p.bias = slots<const S>(bias, kBroadcast, kBroadcast, 0, 1);
  p.s0 = slots<const float>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  p.states = slots<float>(saved.states, 0, 1, 2, 3);
  p.cache = slots<float>(saved.cache, 0, 1, 2, 3);
  p.states_out = slots<S>(states_all, 2, 1, 0, 3);
  p.h_gemm = slots<S>(saved.h_gemm, 0, 1, kBroadcast, 2);
  p.forward_clip = static_cast<float>(problem.forward_clip);
  GemmOperands& op = args.operands;  // per head: R heads, h_gemm[t], rh
  op.entries = N;
  op.a = saved.r_heads.data_ptr();
  op.a_entry_stride = G * D * D;
  op.b = saved.h_gemm.data_ptr();
  op.b_head_stride = D;
  op.b_step_stride = B * N * D;
  op.c = rh.data_ptr();
  op.c_entry_stride = B * G * D;
  op.a_bytes = op.b_bytes = int(sizeof(S));
  op.c_bytes = int(sizeof(float));

  const GemmShape shape{B, N, G, D};
  const Extent extent = p.extent;
  const Cell cell = problem.cell;
  const auto enqueue = [&](c10::cuda::CUDAStream stream, const DeviceSlots<ForwardArgs<S>>& slots,
                           const ForwardArgs<S>& first) {
    const c10::cuda::CUDAStreamGuard stream_guard(stream);
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    check(launch_forward_setup<S>(first, slots, stream.stream()), "forward setup kernel");
    cells::dispatch_cell(cell, [&](auto c) {
      for (int64_t t = 0; t < extent.steps; ++t) {
        recurrent_gemm(handle, kCudaType<S>, slots.gemm, t, shape);
        check(launch_forward_step<decltype(c), S>(slots.args, extent, t, stream.stream()),
              "forward step kernel");
      }
    });
  };
  run_loop(PlanKey{0, c10::cuda::getCurrentCUDAStream().id(), int(cell), int(st), steps, B, N, D, G,
                   false},
           args, device, enqueue);
  return {states_all, saved};
}

template <class S>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const c10::Device device = saved.states.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t steps = saved.states.size(0), B = saved.states.size(1);
  const int64_t N = saved.states.size(3), D = saved.states.size(4);
  const int64_t G = saved.r_heads.size(1) / D;
  const auto f32 = saved.states.options();
  const auto storage = saved.h_gemm.options();

  at::Tensor d_wx = at::empty({B, steps, G, N, D}, storage);
  at::Tensor d_rh = at::empty({N, steps, B, G, D}, storage);
  at::Tensor d_bias = at::zeros({B, saved.biases, N, D}, f32);
  at::Tensor d_s0 = at::zeros_like(saved.s0);
  at::Tensor carry = at::empty_like(saved.s0);
  at::Tensor dh_rec = at::empty({N, G, B, D}, f32);  // per gate; the pointwise step sums them
  const at::Tensor d_states =
      grads.d_states_all.defined() ? rows_contiguous(grads.d_states_all.to(saved.wx_type)) : at::Tensor();
  const at::Tensor d_last =
      grads.d_last.defined() ? rows_contiguous(grads.d_last.to(saved.wx_type)) : at::Tensor();

  BackwardArgs<S> args;
  BackwardStepParams<float, S>& p = args.step;
  p.extent = {steps, B, N, D};
  p.cache = slots<const float>(saved.cache, 0, 1, 2, 3);
  p.states = slots<const float>(saved.states, 0, 1, 2, 3);
  p.s0 = slots<const float>(saved.s0, kBroadcast, 0, 1, 2);
  p.reset = reset_mask_of(saved.reset);
  if (d_states.defined()) p.d_states = slots<const S>(d_states, 2, 1, 0, 3);
  if (d_last.defined()) p.d_last = slots<const S>(d_last, kBroadcast, 1, 0, 3);
  const bool cut = problem.gradient_recurrent_cut;
  if (!cut) p.dh_rec = slots<const float>(dh_rec, kBroadcast, 2, 1, 0);
  p.dh_rec_slots = int(G);
  p.gradient_clip = static_cast<float>(problem.gradient_recurrent_clip);
  p.carry = slots<float>(carry, kBroadcast, 0, 1, 2);
  p.d_wx = slots<S>(d_wx, 1, 0, 2, 3);
  p.d_rh = slots<S>(d_rh, 1, 2, 3, 0);
  p.d_bias = slots<float>(d_bias, kBroadcast, 0, 1, 2);
  p.d_s0 = slots<float>(d_s0, kBroadcast, 0, 1, 2);
  GemmOperands& op = args.operands;  // per (head, gate): R block, d_rh[t] gate, dh_rec
  op.entries = N * G;
  op.groups = G;
  op.a = saved.r_heads.data_ptr();
  op.a_entry_stride = D * D;
  op.b = d_rh.data_ptr();
  op.b_head_stride = steps * B * G * D;
  op.b_group_stride = D;
  op.b_step_stride = B * G * D;
  op.c = dh_rec.data_ptr();
  op.c_entry_stride = B * D;
  op.a_bytes = op.b_bytes = int(sizeof(S));
  op.c_bytes = int(sizeof(float));

  const GemmShape shape{B, N, G, D};
  const Extent extent = p.extent;
  const Cell cell = problem.cell;
  const auto enqueue = [&](c10::cuda::CUDAStream stream, const DeviceSlots<BackwardArgs<S>>& slots,
                           const BackwardArgs<S>& first) {
    const c10::cuda::CUDAStreamGuard stream_guard(stream);
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    check(launch_backward_setup<S>(first, slots, stream.stream()), "backward setup kernel");
    cells::dispatch_cell(cell, [&](auto c) {
      using C = decltype(c);
      for (int64_t t = extent.steps - 1; t >= 0; --t) {
        if (!cut && t + 1 < extent.steps)
          transposed_recurrent_gemm(handle, kCudaType<S>, slots.gemm, t + 1, shape);
        check(launch_backward_step<C, S>(slots.args, extent, t, stream.stream()),
              "backward step kernel");
      }
      if (!cut) transposed_recurrent_gemm(handle, kCudaType<S>, slots.gemm, 0, shape);
      check(launch_initial_state_gradient<C, S>(slots.args, extent, stream.stream()),
            "initial-state gradient kernel");
    });
  };
  run_loop(PlanKey{1, c10::cuda::getCurrentCUDAStream().id(), int(cell), int(saved.wx_type), steps,
                   B, N, D, G, cut},
           args, device, enqueue);

  // δR per head = Σ_{t,b} δ(R h)ᵀ h: one GEMM over all T·B rows (fp32
  // accumulation inside cuBLAS; the result is rounded once, to R's dtype).
  const at::Tensor d_r_heads = at::bmm(d_rh.view({N, steps * B, G * D}).transpose(1, 2),
                                       saved.h_gemm.view({steps * B, N, D}).transpose(0, 1));
  Gradients g;
  g.d_wx = d_wx;
  g.d_r = gates_major(d_r_heads, G).to(saved.r_type);
  g.d_b = d_bias.sum(0).to(saved.b_type);
  g.d_s0 = d_s0;
  return g;
}

}  // namespace

std::string unsupported_reason(const Inputs& in) {
  if (!in.wx.is_cuda()) return "the alternating backend runs on CUDA tensors only";
  const at::ScalarType t = in.wx.scalar_type();
  if (t != at::kBFloat16 && t != at::kHalf && t != at::kFloat)
    return "the alternating backend takes bfloat16, float16 and float32, not " +
           std::string(c10::toString(t));
  return "";
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

}  // namespace flashrnn::alternating
