// The mbarrier operations the fused kernels' exchanges are built from (sm_90;
// on older devices they compile to nothing: the kernels that use them run only
// where the tuner found clusters). `barrier` is a shared::cta address
// (mma::shared_address) of a 64-bit mbarrier.
#pragma once

#include <cstdint>

namespace flashrnn::fused::mbarrier {

// By one thread: the barrier completes a phase after `arrivals` arrivals (and
// the bytes any of them announced).
__device__ __forceinline__ void init(uint32_t barrier, uint32_t arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals));
#endif
}

// By every thread of every CTA of a cluster, once, before any of them uses
// the barriers: thread 0 initialises the `count` mbarriers from `first`
// (8 bytes apart) with arrivals(i) arrivals each, and the cluster's CTAs wait
// for each other, so that no CTA signals a barrier of another before it is
// initialised.
template <class Arrivals>
__device__ __forceinline__ void init_in_cluster(uint32_t first, int count, Arrivals arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (threadIdx.x == 0) {
    for (int i = 0; i < count; ++i) init(first + 8 * i, arrivals(i));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
  __trap();  // clusters need sm_90: the tuner never launches these there
#endif
}

__device__ __forceinline__ void arrive(uint32_t barrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
#endif
}

// An arrival that also announces `bytes` more to come (st.async, bulk copies).
__device__ __forceinline__ void arrive_expect_bytes(uint32_t barrier, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
#endif
}

// Until the phase of parity `parity` has completed. Cluster scope where other
// CTAs wrote what the phase counted (their writes become visible); CTA scope
// where only this CTA's threads and its own bulk copies did.
__device__ __forceinline__ void wait_cluster(uint32_t barrier, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
#endif
}

__device__ __forceinline__ void wait_cta(uint32_t barrier, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
#endif
}

}  // namespace flashrnn::fused::mbarrier
