#include "flashtrain/trainer/step/graph_capture.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <string>

namespace flashtrain::trainer {
namespace {

class AutocastCacheOff {
 public:
  AutocastCacheOff() : was_enabled_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_enabled_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_enabled_;
};

std::int64_t reserved_bytes(c10::DeviceIndex device) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(device).reserved_bytes[0].current;  // [0]: all pools
}

}  // namespace

bool is_out_of_memory(const c10::Error& e) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e)) return true;
  const std::string what = e.what_without_backtrace();
  return what.find("out of memory") != std::string::npos || what.find("ALLOC_FAILED") != std::string::npos;
}

std::int64_t capture_graph(at::cuda::CUDAGraph& graph, const std::function<void()>& work) {
  const c10::DeviceIndex device = c10::cuda::current_device();
  const std::int64_t before = reserved_bytes(device);
  AutocastCacheOff no_cast_cache;
  // Thread-local: the capture forbids this thread's unsafe CUDA calls, not
  // those of others (the batch producer, the communicator's watchdog).
  graph.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);
  try {
    work();
  } catch (...) {
    try {
      graph.capture_end();  // leaves capture mode; an invalidated capture throws here too
    } catch (...) {
      // The error to report is the work's.
    }
    throw;
  }
  graph.capture_end();
  return reserved_bytes(device) - before;
}

}  // namespace flashtrain::trainer
