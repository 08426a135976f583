// One launch configuration of the fused persistent kernel: what the kernel's
// launcher reads. The fields are the variables of models/fused_tiling.txt,
// which says how they relate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace flashrnn::tune {

// How the CTAs that share one head exchange h_t every step.
enum class HeadExchange {
  kNone,     // one CTA holds the whole head: no exchange
  kCluster,  // a thread-block cluster: distributed shared memory and cluster barriers (sm_90)
  kGrid,     // a cooperative grid: global memory (L2) and grid-wide barriers
};

struct FusedConfig {
  // Grid. CTAs = (heads / heads_per_cta) · ctas_per_head · batch_tiles.
  int ctas_per_head = 1;  // CTAs that split one head by hidden units
  HeadExchange exchange = HeadExchange::kNone;
  int heads_per_cta = 1;  // whole heads packed into one CTA (only when ctas_per_head == 1)
  int batch_tile = 16;    // sequences per CTA (mma tile columns)
  int batch_tiles = 1;    // ceil(batch / batch_tile)
  int ctas = 1;

  // Block. warps = heads_per_cta · (units_per_cta / units_per_warp) · k_split.
  int units_per_cta = 0;   // hidden units per head in this CTA (all their gates)
  int units_per_warp = 0;  // units whose gate rows one warp computes
  int k_split = 1;         // warps sharing a row tile, each on one K slice
  int warps = 0;
  int threads = 0;

  // R on chip: of each warp's K slice (head_dim / k_split columns), k_reg
  // columns stay in registers and k_smem in shared memory.
  int k_slice = 0;
  int k_reg = 0;
  int k_smem = 0;

  // Resources per CTA.
  int regs_needed = 0;  // estimated registers per thread
  int regs_alloc = 0;   // rounded up to the allocation granule of 8
  int64_t smem_r = 0;
  int64_t smem_h = 0;
  int64_t smem_wx = 0;
  int64_t smem_reduce = 0;
  int64_t smem_bytes = 0;  // dynamic shared memory of one CTA

  // Cluster dimension to launch with (1 without a cluster).
  int cluster_dim() const { return exchange == HeadExchange::kCluster ? ctas_per_head : 1; }
};

// The choices that define a layout; the other fields of FusedConfig follow
// from them, the shape and the device. A cached choice stores these.
struct FusedDecisions {
  int ctas_per_head = 1;
  HeadExchange exchange = HeadExchange::kNone;
  int heads_per_cta = 1;
  int batch_tile = 16;
  int k_split = 1;
  int units_per_warp = 0;
  int k_reg = 0;

  bool operator==(const FusedDecisions& o) const {
    return ctas_per_head == o.ctas_per_head && exchange == o.exchange &&
           heads_per_cta == o.heads_per_cta && batch_tile == o.batch_tile &&
           k_split == o.k_split && units_per_warp == o.units_per_warp && k_reg == o.k_reg;
  }
};

FusedDecisions decisions_of(const FusedConfig& config);

std::string_view to_string(HeadExchange exchange);
// "none" / "cluster" / "grid"; throws ProblemError otherwise.
HeadExchange parse_head_exchange(std::string_view name);
// One line: "12 CTAs (1 per head), 512 threads (16 warps x k_split 1), ...".
std::string describe(const FusedConfig& config);

}  // namespace flashrnn::tune
