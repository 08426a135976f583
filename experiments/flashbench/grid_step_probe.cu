// The floor of one step of a recurrence whose head is spread over the whole
// GPU instead of one thread-block cluster: the design a head of 1024 or 2048
// dims needs (R, 8 MB or 32 MB in bf16, does not fit a cluster's 16 x 227 KiB
// of shared memory, but fits the shared memory and registers of ~128 SMs).
// Each step every CTA publishes its slice of h_t through global memory (L2),
// waits until every other CTA has published its own, and reads the whole h_t
// (B x D values) back: the step's exchange, without the MMA and the cell
// (their cost per CTA is the cluster kernels', step_floor_probe.cu).
//
// P persistent CTAs (a cooperative launch, so all are resident at once) of
// 256 threads run T steps of LSTM 1xD at batch B = 16, bf16 h:
//
//   flags     each CTA stores its slice, then a release store of the step
//             number into its own flag; a CTA waits with one thread per
//             peer's flag (acquire loads) and reads the whole h (ld.cg)
//   counter   the same, the wait on one counter that every CTA adds 1 to
//             (a release reduction) and one thread polls
//   flags_sync flags without reading h: the barrier alone
//
// h is double-buffered (a CTA overwrites step t-2's h only after every CTA
// has published step t-1, so after every CTA has read step t-2's). The time
// per step is the difference of T = 2048 and T = 1024 over 1024 (no launch
// cost), the median of 5 runs. Standalone:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -I flashrnn_ops/src \
//     experiments/flashbench/grid_step_probe.cu -o grid_probe
//   ./grid_probe [--json FILE]
#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_flags.cuh"

namespace flashrnn {
namespace {

constexpr int kThreads = 256;
constexpr int kBatch = 16;

enum class Wait { kFlags, kCounter };

#define CHECK(call)                                                                   \
  do {                                                                                \
    const cudaError_t status = (call);                                                \
    if (status != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(status)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

using gpu_flags::add_release;
using gpu_flags::load_acquire;
using gpu_flags::store_release;

// h: [2][kBatch][D] bf16; flags: [P] (kFlags) or [1] (kCounter), zero at launch.
// CTA c owns the dims [c * D / P, (c + 1) * D / P).
template <Wait kWait, bool kRead>
__global__ void __launch_bounds__(kThreads) grid_step_kernel(int steps, int dim, __nv_bfloat16* h,
                                                              uint32_t* flags, float* out) {
  extern __shared__ int4 h_tile[];  // the whole h of the step: kBatch * dim bf16
  const int P = gridDim.x, c = blockIdx.x, tid = threadIdx.x;
  const int units = dim / P, d0 = c * units;
  float carry = 0.0f;  // each step's slice depends on the h read before it
  for (int t = 1; t <= steps; ++t) {
    __nv_bfloat16* next = h + size_t(t & 1) * kBatch * dim;
    // The CTA's slice of h_t: kBatch x units values.
    for (int i = tid; i < kBatch * units; i += kThreads) {
      const int b = i / units, u = i % units;
      next[size_t(b) * dim + d0 + u] = __float2bfloat16(carry + float(t + i));
    }
    __syncthreads();  // the slice stored, then published by one thread (release: the CTA's stores before it)
    if (tid == 0) __threadfence();
    if (kWait == Wait::kFlags) {
      if (tid == 0) store_release(&flags[c], uint32_t(t));
      for (int p = tid; p < P; p += kThreads)
        while (load_acquire(&flags[p]) < uint32_t(t)) {
        }
    } else {
      if (tid == 0) {
        add_release(&flags[0], 1u);
        while (load_acquire(&flags[0]) < uint32_t(t) * uint32_t(P)) {
        }
      }
    }
    __syncthreads();
    if (kRead) {
      // The whole h_t into shared memory, 16 bytes a load, past L1 (.cg).
      const int4* source = reinterpret_cast<const int4*>(next);
      const int chunks = kBatch * dim * 2 / 16;
      int acc = 0;
      for (int i = tid; i < chunks; i += kThreads) {
        const int4 v = __ldcg(source + i);
        h_tile[i] = v;
        acc ^= v.x;
      }
      __syncthreads();
      carry = float(acc & 1) + float(reinterpret_cast<const __nv_bfloat16*>(h_tile)[tid % (kBatch * dim)]);
    }
  }
  if (tid == 0) out[c] = carry;
}

struct Case {
  const char* variant;
  Wait wait;
  bool read;
};

float run_ms(const Case& k, int P, int dim, int steps, __nv_bfloat16* h, uint32_t* flags, float* out) {
  const size_t smem = k.read ? size_t(kBatch) * dim * 2 : 0;
  void* kernel = k.wait == Wait::kFlags
                     ? (k.read ? (void*)grid_step_kernel<Wait::kFlags, true> : (void*)grid_step_kernel<Wait::kFlags, false>)
                     : (void*)grid_step_kernel<Wait::kCounter, true>;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  CHECK(cudaMemset(flags, 0, sizeof(uint32_t) * 4096));
  void* args[] = {&steps, &dim, &h, &flags, &out};
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  // Cooperative: every CTA resident at once, or the launch fails (never a hang).
  CHECK(cudaLaunchCooperativeKernel(kernel, dim3(P), dim3(kThreads), args, smem, nullptr));
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return ms;
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace flashrnn

int main(int argc, char** argv) {
  using namespace flashrnn;
  const char* json = argc == 3 && std::strcmp(argv[1], "--json") == 0 ? argv[2] : nullptr;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const Case cases[] = {{"flags", Wait::kFlags, true}, {"counter", Wait::kCounter, true},
                        {"flags_sync", Wait::kFlags, false}};
  __nv_bfloat16* h;
  uint32_t* flags;
  float* out;
  CHECK(cudaMalloc(&h, size_t(2) * kBatch * 2048 * 2));
  CHECK(cudaMalloc(&flags, sizeof(uint32_t) * 4096));
  CHECK(cudaMalloc(&out, sizeof(float) * 4096));
  std::FILE* f = json ? std::fopen(json, "w") : nullptr;
  if (f) std::fprintf(f, "{\"device\": \"%s\", \"sms\": %d, \"batch\": %d, \"cases\": [", prop.name,
                      prop.multiProcessorCount, kBatch);
  std::printf("%-11s %5s %4s %12s\n", "variant", "D", "P", "us per step");
  bool first = true;
  for (const Case& k : cases)
    for (int dim : {768, 1024, 2048})
      for (int P : {16, 32, 64, 128}) {
        if (dim % P != 0 || P > prop.multiProcessorCount) continue;
        run_ms(k, P, dim, 64, h, flags, out);  // warm-up
        std::vector<float> per_step;
        for (int rep = 0; rep < 5; ++rep)
          per_step.push_back((run_ms(k, P, dim, 2048, h, flags, out) - run_ms(k, P, dim, 1024, h, flags, out)) *
                             1000.0f / 1024.0f);
        const float us = median(per_step);
        std::printf("%-11s %5d %4d %12.3f\n", k.variant, dim, P, us);
        if (f) std::fprintf(f, "%s{\"variant\": \"%s\", \"dim\": %d, \"ctas\": %d, \"us_per_step\": %.4f}",
                            first ? "" : ", ", k.variant, dim, P, us);
        first = false;
      }
  if (f) {
    std::fprintf(f, "]}\n");
    std::fclose(f);
  }
  return 0;
}
