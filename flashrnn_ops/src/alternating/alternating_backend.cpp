#include "alternating/alternating_backend.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "alternating/captured_loop.h"
#include "alternating/recurrent_gemm.h"
#include "cells/registry.h"
#include "cuda_storage.h"
#include "step_params.h"

namespace flashrnn::alternating {
namespace {

template <class S> constexpr cudaDataType kCudaType = CUDA_R_32F;
template <> constexpr cudaDataType kCudaType<__nv_bfloat16> = CUDA_R_16BF;
template <> constexpr cudaDataType kCudaType<__half> = CUDA_R_16F;

void check(cudaError_t status, const char* what) { check_launch(status, "alternating", what); }

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

// What a captured loop is specific to: device, stream, cell, dtype, shape, cut.
using PlanKey = std::tuple<int, int64_t, int, int, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

PlanKey plan_key(c10::Device device, Cell cell, at::ScalarType type, const Extent& x,
                 int64_t gates, bool cut) {
  return {device.index(), c10::cuda::getCurrentCUDAStream(device.index()).id(), int(cell),
          int(type), x.steps, x.batch, x.heads, x.head_dim, gates, cut};
}

// Runs enqueue(stream, slots, args): replayed from a cached graph, or directly
// when the caller's stream is itself being captured (graphs do not nest).
// Each instantiation (forward or backward, per storage type) has its own cache.
template <class Args, class Enqueue>
void run_loop(const PlanKey& key, const Args& args, c10::Device device, const Enqueue& enqueue) {
  static std::mutex mutex;
  static std::map<PlanKey, std::unique_ptr<Plan<Args>>> plans;
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
  std::unique_ptr<Plan<Args>>& entry = plans[key];
  if (!entry) {  // cached only once captured: a failed capture leaves no half plan
    auto plan = std::make_unique<Plan<Args>>(
        Plan<Args>{DeviceMemory<Args>(x, args.operands.entries, device), nullptr});
    const DeviceSlots<Args> slots = plan->memory.slots;
    plan->loop = std::make_unique<CapturedLoop>(
        [&](c10::cuda::CUDAStream side) { enqueue(side, slots, args); }, device.index());
    entry = std::move(plan);
  }
  Args by_value = args;
  DeviceSlots<Args> slots = entry->memory.slots;
  void* kernel_args[] = {&by_value, &slots};  // the setup kernel's parameters
  entry->loop->replay(kernel_args, stream.stream());
}

template <class S>
ForwardResult forward_typed(const Problem& problem, const Inputs& in) {
  const c10::Device device = in.wx.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t B = in.wx.size(0), G = in.wx.size(2);
  const int64_t N = in.wx.size(3), D = in.wx.size(4);
  const at::ScalarType st = in.wx.scalar_type();
  Saved saved = allocate_forward(problem, in, at::kFloat, st);
  const at::Tensor wx = rows_contiguous(in.wx);
  const at::Tensor bias = in.b.to(st).contiguous();
  const at::Tensor rh = at::empty({N, B, G, D}, saved.s0.options());
  const at::Tensor running = at::empty_like(saved.s0);
  ForwardResult result = allocate_outputs(problem, in);

  ForwardArgs<S> args;
  args.step = forward_params<float, S>(problem, saved, wx, bias, rh, running, result.states_all,
                                       result.last_states);
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
  const Extent extent = args.step.extent;
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
  run_loop(plan_key(device, cell, st, extent, G, false), args, device, enqueue);
  result.saved = saved;
  return result;
}

template <class S>
Gradients backward_typed(const Problem& problem, const Saved& saved, const OutputGradients& grads) {
  const c10::Device device = saved.states.device();
  const c10::cuda::CUDAGuard guard(device);
  const int64_t steps = saved.states.size(0), B = saved.states.size(1), D = saved.states.size(4);
  const int64_t N = saved.r_heads.size(0), G = saved.r_heads.size(1) / D;
  // R_kᵀ δ_k per gate; the pointwise step sums them (see recurrent_gemm.h).
  BackwardTensors b = allocate_backward(saved, grads, saved.wx_type, G);
  BackwardArgs<S> args;
  args.step = backward_params<float, S>(problem, saved, b);
  const bool cut = problem.gradient_recurrent_cut;
  GemmOperands& op = args.operands;  // per (head, gate): R block, d_rh[t] gate, dh_rec
  op.entries = N * G;
  op.groups = G;
  op.a = saved.r_heads.data_ptr();
  op.a_entry_stride = D * D;
  op.b = b.d_rh.data_ptr();
  op.b_head_stride = steps * B * G * D;
  op.b_group_stride = D;
  op.b_step_stride = B * G * D;
  op.c = b.dh_rec.data_ptr();
  op.c_entry_stride = B * D;
  op.a_bytes = op.b_bytes = int(sizeof(S));
  op.c_bytes = int(sizeof(float));

  const GemmShape shape{B, N, G, D};
  const Extent extent = args.step.extent;
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
  run_loop(plan_key(device, cell, saved.wx_type, extent, G, cut), args, device, enqueue);

  return {b.d_wx, recurrent_weight_gradient(saved, b.d_rh), b.d_bias.sum(0).to(saved.b_type),
          b.d_s0};
}

}  // namespace

std::string unsupported_reason(const Inputs& in) {
  if (!in.wx.is_cuda()) return "the alternating backend runs on CUDA tensors only";
  const at::ScalarType t = in.wx.scalar_type();
  if (!is_cuda_storage_type(t))
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
