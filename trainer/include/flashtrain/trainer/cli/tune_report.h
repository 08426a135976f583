// `flashtrain tune`: the tuner's configuration of the fused kernel for the
// recurrent blocks of a config (flashrnn_ops/tune), and its reasons. The shape
// comes from [model] (cell, n_heads, head_dim) and [training]
// (local_batch_size; mixed_precision bf16 -> bf16, fp32 -> fp32). No torch.
#pragma once

#include <string>

#include "flashtrain/config/resolved_config.h"

namespace flashtrain::trainer {

// `device`: a fixture (a100, h100, h200, l4) or cuda / cuda:N; "" means the
// live GPU 0. Throws UsageError for an unknown device or when there is no GPU
// to read (the message says to name a fixture).
std::string tune_report(const config::ResolvedConfig& resolved, const std::string& device);

}  // namespace flashtrain::trainer
