// A ring of shared-memory slots through which one producer thread streams a
// fixed sequence of equal slices from global memory (L2), pass after pass,
// to the consumer threads of its CTA: the backward of a wide head reads Rᵀ's
// slices that fit neither its registers nor its shared memory this way, every
// step (tc_backward.cuh).
//
// Slot i % kSlots holds slice i (the (i / kSlots)-th filling of the slot). The
// producer fills it with one bulk copy (cp.async.bulk, sm_90), counted in bytes
// on the slot's `full` mbarrier; the consumers wait for that filling, read the
// slot and arrive on its `empty` mbarrier; the producer refills a slot only
// after every consumer has arrived. Each consumer thread reads only the slices
// in order, so a slice's index is a counter every thread keeps.
#pragma once

#include <cstdint>

#include "fused/mbarrier.cuh"
#include "fused/mma.cuh"

namespace flashrnn::fused {

template <int kSlots>
class SliceRing {
 public:
  // `slots`: kSlots slots of `slice_bytes` each (16-byte aligned, a multiple
  // of 16); `barriers`: 2·kSlots mbarriers in shared memory (full, then empty).
  __device__ SliceRing(void* slots, uint64_t* barriers, uint32_t slice_bytes)
      : slot_data_(static_cast<const char*>(slots)),
        slots_(mma::shared_address(slots)),
        barriers_(mma::shared_address(barriers)),
        slice_bytes_(slice_bytes) {}

  // By one thread before anyone uses the ring; made visible to the CTA (and
  // its bulk copies) by a fence.mbarrier_init and a barrier after it.
  __device__ void init(int consumers) const {
    for (int s = 0; s < kSlots; ++s) {
      mbarrier::init(full(s), 1);
      mbarrier::init(empty(s), uint32_t(consumers));
    }
  }

  // By the producer thread: `passes` times the `count` slices at `source`, in order.
  __device__ void produce(const void* source, int count, uint32_t passes) const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const char* from = static_cast<const char*>(source);
    const uint32_t total = passes * uint32_t(count);
    for (uint32_t i = 0; i < total; ++i) {
      const int s = int(i % kSlots);
      // Slot s is free once the consumers are done with slice i - kSlots.
      if (i >= kSlots) mbarrier::wait_cta(empty(s), (i / kSlots - 1) & 1);
      mbarrier::arrive_expect_bytes(full(s), slice_bytes_);
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
              slots_ + s * slice_bytes_),
          "l"(from + int64_t(i % uint32_t(count)) * slice_bytes_), "r"(slice_bytes_), "r"(full(s))
          : "memory");
    }
#endif
  }

  // By every consumer: slice i, once it has arrived in its slot.
  template <class T>
  __device__ const T* acquire(uint32_t i) const {
    const int s = int(i % kSlots);
    mbarrier::wait_cta(full(s), (i / kSlots) & 1);
    return reinterpret_cast<const T*>(slot_data_ + s * slice_bytes_);
  }

  // By every consumer, after its last read of slice i.
  __device__ void release(uint32_t i) const { mbarrier::arrive(empty(int(i % kSlots))); }

 private:
  __device__ uint32_t full(int s) const { return barriers_ + 8 * s; }
  __device__ uint32_t empty(int s) const { return barriers_ + 8 * (kSlots + s); }

  const char* slot_data_;                   // the slots, as the consumers read them
  uint32_t slots_, barriers_, slice_bytes_;  // shared addresses, as the copies and mbarriers take them
};

}  // namespace flashrnn::fused
