// What the alternating backend's CUDA graphs read at run time. A graph is
// captured once per shape; the tensors change from call to call, so the graph's
// kernels read their pointers from device memory (StepArgs) that the graph's
// first node, the setup kernel, writes from its by-value argument, which is the
// one parameter updated before each replay. cuBLAS reads its per-head operand
// pointers from device arrays that the setup kernel fills too.
#pragma once

#include <cuda_runtime_api.h>

#include "pointwise.h"

namespace flashrnn::alternating {

// Operand pointers of one batched GEMM per step: A and C per batch entry, B per
// (step, entry). The arrays live in device memory.
struct GemmPointers {
  const void** a = nullptr;  // [E]
  const void** b = nullptr;  // [T·E]
  void** c = nullptr;        // [E]
};

// Where the setup kernel finds each operand and how the E = heads·groups batch
// entries and the steps are strided (in elements of the operand's type). Entry
// i is (head i / groups, group i % groups).
struct GemmOperands {
  int64_t entries = 0, groups = 1;
  const void* a = nullptr;
  int64_t a_entry_stride = 0;
  const void* b = nullptr;
  int64_t b_head_stride = 0, b_group_stride = 0, b_step_stride = 0;
  void* c = nullptr;
  int64_t c_entry_stride = 0;
  int a_bytes = 0, b_bytes = 0, c_bytes = 0;  // element sizes
};

template <class S>
struct ForwardArgs {
  ForwardStepParams<float, S> step;
  GemmOperands operands;  // R·h: A = R heads, B = h_gemm[t], C = rh
};

template <class S>
struct BackwardArgs {
  BackwardStepParams<float, S> step;
  GemmOperands operands;  // R_kᵀ·δ_k per (head, gate k): A = R blocks, B = d_rh[t], C = dh_rec
};

// Device memory of a graph: the args its kernels read and the GEMM pointers.
template <class Args>
struct DeviceSlots {
  Args* args = nullptr;
  GemmPointers gemm;
};

// Setup kernels: copy `args` to device memory, fill the GEMM pointer arrays and
// (forward) write h_gemm[0] from the initial states.
template <class S>
cudaError_t launch_forward_setup(const ForwardArgs<S>& args, const DeviceSlots<ForwardArgs<S>>& dst,
                                 cudaStream_t stream);
template <class S>
cudaError_t launch_backward_setup(const BackwardArgs<S>& args,
                                  const DeviceSlots<BackwardArgs<S>>& dst, cudaStream_t stream);

// Pointwise steps reading their params from device memory.
template <class Cell, class S>
cudaError_t launch_forward_step(const ForwardArgs<S>* args, const Extent& extent, int64_t t,
                                cudaStream_t stream);
template <class Cell, class S>
cudaError_t launch_backward_step(const BackwardArgs<S>* args, const Extent& extent, int64_t t,
                                 cudaStream_t stream);
template <class Cell, class S>
cudaError_t launch_initial_state_gradient(const BackwardArgs<S>* args, const Extent& extent,
                                          cudaStream_t stream);

}  // namespace flashrnn::alternating
