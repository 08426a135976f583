// What the training step (device_step.h) and the micro-batch probe
// (auto_batch.h) both need of a CUDA graph capture: one that ends cleanly when
// its work fails (out of memory), the memory its private pool took, and how to
// tell the GPU running out of memory from other errors.
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>
#include <functional>

namespace at::cuda {
struct CUDAGraph;
}

namespace flashtrain::trainer {

// Whether a torch error is the GPU running out of memory: the caching
// allocator's OutOfMemoryError, or a library that failed to allocate its workspace.
bool is_out_of_memory(const c10::Error& e);

// Captures `work` into `graph` on the current stream (not the default one),
// with autocast's weight-cast cache off (a capture must not reuse casts made
// outside it, nor leave its own in the cache), into a private memory pool of
// its own. Returns the bytes that pool reserved: with the allocator's cache
// emptied before, what the replays hold on the GPU beyond the tensors that
// live outside the graph. When `work` throws, the capture is ended (the graph
// is then of no use) and the error rethrown, so the stream and the allocator
// are usable again.
std::int64_t capture_graph(at::cuda::CUDAGraph& graph, const std::function<void()>& work);

}  // namespace flashtrain::trainer
