#include "flashrnn/tune/fused_cost.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "cell_types.h"

namespace flashrnn::tune {
namespace {

// Dense tensor-core FMAs per cycle per SM with mma.sync and 16-bit inputs.
// A100: 312 TFLOPS bf16 = 108 SMs · 1.41 GHz · 2048 flop/cycle, so 1024 FMA;
// L4 (sm_89): 121 TFLOPS dense at 58 SMs · 2.04 GHz, so 512; H100: wgmma
// reaches 2048, mma.sync about half of it. tf32 (fp32 inputs) runs at half rate.
double mma_fma_per_cycle(const DeviceProps& d, DType dtype) {
  const double rate = d.compute_major == 8 && d.compute_minor == 9 ? 512 : 1024;
  return dtype == DType::kFp32 ? rate / 2 : rate;
}

constexpr double kMmaLatencyCycles = 32;     // one dependent mma.sync m16n8k16
constexpr double kSmemBytesPerCycle = 128;   // shared-memory bandwidth of an SM
constexpr double kBarrierCycles = 40;        // __syncthreads
constexpr double kClusterSyncCycles = 500;   // cluster barrier arrive + wait, DSMEM visible
constexpr double kDsmemBytesPerCycle = 32;   // stores into other CTAs' shared memory
constexpr double kGridSyncCycles = 3000;     // cooperative grid barrier, about 1.5 us
constexpr double kL2BytesPerCycle = 64;      // one SM reading h back through L2

// Cycles a thread spends on one output element's cell update (transcendentals
// dominate: LSTM three sigmoids and two tanh; sLSTM adds exp, log and a divide).
double pointwise_cycles_per_element(Cell cell) {
  return with_cell(cell, [](auto c) { return double(decltype(c)::kTunerUpdateCycles); });
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

FusedCost estimate_fused_cost(const DeviceProps& device, const FusedShape& shape,
                              const FusedConfig& c) {
  const double gates = cell_gates(shape.cell);
  const double bytes = dtype_bytes(shape.dtype);
  FusedCost cost;

  // R·h for the CTA: bounded by the SM's tensor throughput, by the chain of
  // dependent mma over a warp's K slice, and by one warp issuing its own tiles
  // (a warp runs on one of the SM's four sub-partitions).
  const double rate = mma_fma_per_cycle(device, shape.dtype);
  const double fma = double(c.heads_per_cta) * gates * c.units_per_cta * shape.head_dim * c.batch_tile;
  const double chain = c.k_slice / 16.0 * kMmaLatencyCycles;
  const double warp_fma = gates * c.units_per_warp * c.k_slice * c.batch_tile;
  cost.mma_cycles = std::max({fma / rate, chain, warp_fma / (rate / 4)});

  // R's shared-memory part and each warp's slice of h are read every step.
  const double h_bytes = double(c.warps) * c.k_slice * c.batch_tile * bytes;
  cost.smem_cycles = (double(c.smem_r) + h_bytes) / kSmemBytesPerCycle;

  // Split K: partial sums written and read back, one more barrier.
  cost.reduce_cycles = c.k_split > 1 ? 2.0 * c.smem_reduce / kSmemBytesPerCycle + kBarrierCycles : 0;

  const int64_t outputs = int64_t(c.heads_per_cta) * c.units_per_cta * c.batch_tile;
  cost.pointwise_cycles =
      double(ceil_div(outputs, c.threads)) * pointwise_cycles_per_element(shape.cell);

  // Two block barriers per step (h_t published, buffers reused), plus the
  // exchange of h_t slices between the CTAs of a split head.
  cost.sync_cycles = 2 * kBarrierCycles;
  const double slice_bytes = double(c.units_per_cta) * c.batch_tile * bytes;
  if (c.exchange == HeadExchange::kCluster)
    cost.sync_cycles += kClusterSyncCycles + slice_bytes * (c.ctas_per_head - 1) / kDsmemBytesPerCycle;
  if (c.exchange == HeadExchange::kGrid)
    cost.sync_cycles += kGridSyncCycles + double(shape.head_dim) * c.batch_tile * bytes / kL2BytesPerCycle;

  // One CTA per SM: more CTAs than SMs run in waves, each the whole sequence.
  cost.waves = int(ceil_div(c.ctas, device.sm_count));
  cost.step_cycles = cost.waves * (cost.mma_cycles + cost.smem_cycles + cost.reduce_cycles +
                                   cost.pointwise_cycles + cost.sync_cycles);
  cost.step_ns = cost.step_cycles / (device.clock_mhz * 1e-3);
  return cost;
}

std::string describe(const FusedCost& cost) {
  char text[256];
  std::snprintf(text, sizeof text,
                "%.3f us/step (mma %.0f, smem %.0f, reduce %.0f, pointwise %.0f, sync %.0f "
                "cycles; %d wave%s)",
                cost.step_ns * 1e-3, cost.mma_cycles, cost.smem_cycles, cost.reduce_cycles,
                cost.pointwise_cycles, cost.sync_cycles, cost.waves, cost.waves == 1 ? "" : "s");
  return text;
}

}  // namespace flashrnn::tune
