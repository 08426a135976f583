// The defaults of the block options that the trainer's config exposes as keys,
// and the checks their values share: one definition each, read by options.h
// and by trainer/config (which does not include torch, so neither does this).
#pragma once

#include <cstdint>
#include <string>

namespace flashtrain::models::defaults {

// lstm / gru: the gate that keeps the state starts with biases spaced over [min, max].
inline constexpr double kRetainBiasMin = 1.0;
inline constexpr double kRetainBiasMax = 3.0;
// lstm / gru / elman: R ~ U(-s/sqrt(D), s/sqrt(D)) (1: PyTorch's nn.LSTM).
inline constexpr double kRecurrentInitScale = 1.0;
// sLSTM: the causal convolution feeding i and f.
inline constexpr std::int64_t kConvKernel = 4;
// Transformer: the rotary position base.
inline constexpr double kRopeTheta = 10000.0;
// Every norm of a model.
inline constexpr double kNormEps = 1e-5;

// Empty when min and max can space the retaining gate's biases, else why not,
// naming them as the caller calls them.
inline std::string retain_bias_problem(double min, double max, const std::string& min_name,
                                       const std::string& max_name) {
  if (min <= max) return "";
  return min_name + " (" + std::to_string(min) + ") is above " + max_name + " (" + std::to_string(max) + ")";
}

}  // namespace flashtrain::models::defaults
