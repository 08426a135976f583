// cp.async, once for every kernel of the library (sm_80 and later): copies
// global -> shared that run behind the thread's back, committed in groups and
// waited for by count. The "memory" clobbers keep the compiler from moving
// shared-memory accesses across them (the copies write shared memory it
// cannot see).
#pragma once

namespace flashrnn::async_copy {

// kBytes (4, 8 or 16) from `global` to `shared`, both aligned to kBytes. 16
// bytes go .cg (to L2 only, no L1 allocation: data read once), smaller .ca.
template <int kBytes>
__device__ __forceinline__ void copy(void* shared, const void* global) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(global) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(global), "n"(kBytes) : "memory");
}

// Closes this thread's current group of copies.
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most `kPending` of this thread's committed groups are in flight.
template <int kPending>
__device__ __forceinline__ void wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

}  // namespace flashrnn::async_copy
