// Generation in step-by-step mode: the prompt is fed one token at a time
// (the RNN state is O(1) per token), then each new token is the argmax
// (temperature 0) or a draw from softmax(logits / temperature).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "flashtrain/models/language_model.h"

namespace flashtrain::trainer {

struct SampleOptions {
  std::int64_t max_new_tokens = 64;
  double temperature = 0.0;  // 0: greedy
  std::uint64_t seed = 0;    // of the draws (temperature > 0)
  std::optional<std::int32_t> stop_token;  // generation ends after emitting it
};

// Where a generation's time went (the device synchronised at each end).
struct GenerationTimes {
  double prefill_seconds = 0.0;  // the prompt, in one forward_chunk
  double decode_seconds = 0.0;   // the new tokens, one forward_step each
};

// The generated tokens (not the prompt). `prompt` must not be empty. The prompt
// goes through the model in one forward_chunk (its recurrent blocks in one
// pass of their kernels), then each new token in one forward_step.
std::vector<std::int32_t> generate(models::LanguageModelImpl& model, const std::vector<std::int32_t>& prompt,
                                   const SampleOptions& options, GenerationTimes* times = nullptr);

}  // namespace flashtrain::trainer
