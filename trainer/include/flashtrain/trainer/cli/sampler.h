// Generation: the prompt goes through the model in one forward_chunk (its
// recurrent blocks in one pass of their kernels), then each new token is the
// argmax (temperature 0) or a draw from softmax(logits / temperature), fed back
// in one forward_step. On a GPU the step is replayed from a CUDA graph where
// the state keeps its shape from step to step (every block but attention,
// whose KV cache grows): one launch a token instead of the blocks' dozens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

struct SampleOptions {
  std::int64_t max_new_tokens = 64;
  double temperature = 0.0;  // 0: greedy
  std::uint64_t seed = 0;    // of the draws (temperature > 0)
  std::optional<std::int32_t> stop_token;  // generation ends after emitting it
  bool cuda_graph = true;    // replay the decode step from a CUDA graph where it can be
};

// Where a generation's time went (the device synchronised at each end).
struct GenerationTimes {
  double prefill_seconds = 0.0;  // the prompt, in one forward_chunk
  double decode_seconds = 0.0;   // the new tokens, one forward_step each
  double capture_seconds = 0.0;  // setting the decode step up: its CUDA graph's capture (not in decode_seconds)
  // How the decode steps ran: "cuda graph", or "eager" and why not graphed.
  std::string decode_mode;
  // On a GPU, the most memory the caching allocator held for tensors during the
  // generation (the weights included); 0 on the CPU.
  std::int64_t peak_memory_bytes = 0;
};

// The generated tokens (not the prompt). `prompt` must not be empty.
std::vector<std::int32_t> generate(models::LanguageModelImpl& model, const std::vector<std::int32_t>& prompt,
                                   const SampleOptions& options, GenerationTimes* times = nullptr);

}  // namespace flashtrain::trainer
