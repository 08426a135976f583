// Generation: the prompt goes through the model in one forward_chunk (its
// recurrent blocks in one pass of their kernels; on a GPU the blocks as a
// wavefront over chunks of the prompt, several at work at once), then each new token is the
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
  // The prefill's wavefront chunks (LanguageModelImpl::forward_chunk; 0: block
  // after block); unset: auto_prefill_chunks.
  std::optional<std::int64_t> prefill_chunks;
};

// The prefill's chunks where none are asked for: the model's wavefront_chunks
// where set; else on a GPU two per block where each chunk keeps at least
// kMinPrefillChunkTokens tokens (a 6-block LSTM at batch 4 and 16k tokens
// trains 2.3x faster in 12 chunks than block after block,
// experiments/results/lm/wavefront_speed.json), else 0.
inline constexpr std::int64_t kMinPrefillChunkTokens = 256;
std::int64_t auto_prefill_chunks(const models::LanguageModelImpl& model, std::int64_t prompt_tokens, bool on_gpu);

// Where a generation's time went (the device synchronised at each end).
struct GenerationTimes {
  double prefill_seconds = 0.0;  // the prompt, in one forward_chunk
  std::int64_t prefill_chunks = 0;  // its wavefront chunks (0: block after block)
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
