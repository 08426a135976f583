// A first-order estimate of one time step of the fused kernel, used to rank
// the feasible configurations. The terms are latencies of the per-step critical
// path in SM cycles; the constants (fused_cost.cpp) come from public throughput
// and latency figures, not from measurements of our kernels, which the timed
// refinement (refine.h) supplies.
#pragma once

#include <string>

#include "flashrnn/tune/device_props.h"
#include "flashrnn/tune/fused_config.h"
#include "flashrnn/tune/fused_shape.h"

namespace flashrnn::tune {

struct FusedCost {
  double mma_cycles = 0;        // R·h: tensor throughput, or the dependent k chain
  double smem_cycles = 0;       // reading R's shared-memory part and h every step
  double reduce_cycles = 0;     // adding the partial sums of split K
  double pointwise_cycles = 0;  // the cell update of the CTA's outputs
  double sync_cycles = 0;       // barriers, and exchanging h_t between the CTAs of a head
  int waves = 1;                // rounds of CTAs when there are more CTAs than SMs
  double step_cycles = 0;       // waves · (sum of the terms)
  double step_ns = 0;           // at the device's clock
};

FusedCost estimate_fused_cost(const DeviceProps& device, const FusedShape& shape,
                              const FusedConfig& config);

// "0.34 us/step (mma 256, smem 256, reduce 0, pointwise 80, sync 80 cycles; 1 wave)".
std::string describe(const FusedCost& cost);

}  // namespace flashrnn::tune
