#include "wavefront.h"

#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <optional>

namespace flashtrain::models {
namespace {

// One CUDA stream per block, forked from the current stream (so that a CUDA
// graph capture takes them in) and joined back to it; nothing on the CPU.
class BlockStreams {
 public:
  BlockStreams(const torch::Device& device, std::size_t blocks) {
    if (!device.is_cuda()) return;
    origin_ = c10::cuda::getCurrentCUDAStream(device.index());
    at::cuda::CUDAEvent forked;
    forked.record(*origin_);
    for (std::size_t l = 0; l < blocks; ++l) {
      streams_.push_back(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index()));
      forked.block(streams_.back());
    }
    done_.resize(blocks);
  }

  // Block l's work from here on runs on its stream (nothing on the CPU).
  std::optional<c10::cuda::CUDAStreamGuard> enter(std::size_t l) const {
    if (streams_.empty()) return std::nullopt;
    return std::optional<c10::cuda::CUDAStreamGuard>(std::in_place, streams_[l]);
  }

  // Block l is about to read `input`, block l-1's latest output (or the
  // embedding, made before the fork): its stream waits for that output, and
  // the allocator learns that the memory is in use on it too.
  void hand_over(std::size_t l, const torch::Tensor& input) {
    if (streams_.empty()) return;
    if (l > 0) done_[l - 1].block(streams_[l]);
    c10::cuda::CUDACachingAllocator::recordStream(input.storage().data_ptr(), streams_[l]);
  }

  // Block l has queued its output for the current chunk.
  void finished(std::size_t l) {
    if (!streams_.empty()) done_[l].record(streams_[l]);
  }

  // The caller's stream waits for every block, and takes over `outputs` and
  // the blocks' last states.
  void join(const std::vector<torch::Tensor>& outputs, const std::vector<BlockState>& states) {
    if (streams_.empty()) return;
    for (std::size_t l = 0; l < streams_.size(); ++l) {
      at::cuda::CUDAEvent joined;
      joined.record(streams_[l]);
      joined.block(*origin_);
    }
    for (const torch::Tensor& output : outputs)
      c10::cuda::CUDACachingAllocator::recordStream(output.storage().data_ptr(), *origin_);
    for (const BlockState& state : states)
      for (const auto& entry : state)
        if (entry.second.defined())
          c10::cuda::CUDACachingAllocator::recordStream(entry.second.storage().data_ptr(), *origin_);
  }

 private:
  std::optional<c10::cuda::CUDAStream> origin_;
  std::vector<c10::cuda::CUDAStream> streams_;
  // done_[l]: recorded on block l's stream after its latest chunk; block l+1
  // waits on it before taking that chunk (run_wavefront's order keeps it the
  // right one).
  std::vector<at::cuda::CUDAEvent> done_;
};

}  // namespace

WavefrontOutput run_wavefront(std::vector<ResidualBlock>& blocks, const torch::Tensor& x, int64_t chunks,
                              const torch::TensorOptions& state_options, const std::vector<BlockState>& initial) {
  std::vector<torch::Tensor> pieces = x.chunk(chunks, 1);
  const std::size_t L = blocks.size(), K = pieces.size();
  if (!initial.empty() && initial.size() != L)
    throw std::invalid_argument("run_wavefront: " + std::to_string(initial.size()) + " initial states for " +
                                std::to_string(L) + " blocks");
  std::vector<BlockState> states(L);
  BlockStreams streams(x.device(), L);
  for (std::size_t wave = 0; wave + 1 < L + K; ++wave) {
    // Top block first: block l waits on done_[l - 1] for chunk wave - l, which
    // block l - 1 recorded in the previous wave and records anew only after.
    const std::size_t lowest = wave >= K ? wave - K + 1 : 0;
    for (std::size_t l = std::min(L - 1, wave) + 1; l-- > lowest;) {
      const std::size_t k = wave - l;
      const auto on_block_stream = streams.enter(l);
      streams.hand_over(l, pieces[k]);
      if (k == 0) states[l] = initial.empty() ? blocks[l]->initial_state(x.size(0), state_options) : initial[l];
      ChunkOutput out = blocks[l]->forward_chunk(pieces[k], states[l]);
      pieces[k] = std::move(out.y);
      states[l] = std::move(out.state);
      streams.finished(l);
    }
  }
  streams.join(pieces, states);
  return {torch::cat(pieces, 1), std::move(states)};
}

}  // namespace flashtrain::models
