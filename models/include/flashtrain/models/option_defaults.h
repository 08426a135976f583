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
// The feed-forward: hidden width = factor * d_model rounded up to a multiple of multiple_of.
inline constexpr double kFfnFactor = 4.0 / 3.0;
inline constexpr std::int64_t kFfnMultipleOf = 64;
// sLSTM (xLSTM's): forget-gate biases spaced over [min, max]; R starts at scale 0 (zeros).
inline constexpr double kSlstmForgetBiasMin = 3.0;
inline constexpr double kSlstmForgetBiasMax = 6.0;
inline constexpr double kSlstmRecurrentInitScale = 0.0;
// The linear scan: the decay's timescales log-spaced over [min, max] steps.
inline constexpr double kScanMinTimescale = 4.0;
inline constexpr double kScanMaxTimescale = 1024.0;

// Empty when min and max can space the retaining gate's biases, else why not,
// naming them as the caller calls them.
inline std::string retain_bias_problem(double min, double max, const std::string& min_name,
                                       const std::string& max_name) {
  if (min <= max) return "";
  return min_name + " (" + std::to_string(min) + ") is above " + max_name + " (" + std::to_string(max) + ")";
}

}  // namespace flashtrain::models::defaults
