#include "flashrnn/tune/fused_config.h"

#include <sstream>

namespace flashrnn::tune {

std::string_view to_string(HeadExchange exchange) {
  switch (exchange) {
    case HeadExchange::kNone: return "none";
    case HeadExchange::kCluster: return "cluster";
    case HeadExchange::kGrid: return "grid";
  }
  return "?";
}

std::string describe(const FusedConfig& c) {
  std::ostringstream s;
  s << c.ctas << " CTAs (";
  if (c.ctas_per_head > 1)
    s << c.ctas_per_head << " per head, exchange via " << to_string(c.exchange);
  else
    s << c.heads_per_cta << (c.heads_per_cta == 1 ? " head" : " heads") << " per CTA";
  s << ", batch tile " << c.batch_tile << " x " << c.batch_tiles << "), " << c.threads
    << " threads (" << c.warps << " warps: " << c.units_per_warp << " units each, k_split "
    << c.k_split << "), R columns per warp slice: " << c.k_reg << " in registers + " << c.k_smem
    << " in shared memory, " << c.regs_alloc << " registers/thread, " << c.smem_bytes
    << " B shared memory";
  return s.str();
}

}  // namespace flashrnn::tune
