#include "flashrnn/tune/fused_config.h"

#include <sstream>
#include <string>

#include "flashrnn/tune/errors.h"

namespace flashrnn::tune {

std::string_view to_string(HeadExchange exchange) {
  switch (exchange) {
    case HeadExchange::kNone: return "none";
    case HeadExchange::kCluster: return "cluster";
    case HeadExchange::kGrid: return "grid";
  }
  return "?";
}

HeadExchange parse_head_exchange(std::string_view name) {
  for (HeadExchange e : {HeadExchange::kNone, HeadExchange::kCluster, HeadExchange::kGrid})
    if (to_string(e) == name) return e;
  throw ProblemError("unknown head exchange '" + std::string(name) +
                     "'; choose one of none, cluster, grid");
}

FusedDecisions decisions_of(const FusedConfig& c) {
  return FusedDecisions{c.ctas_per_head, c.exchange,       c.heads_per_cta, c.batch_tile,
                        c.k_split,       c.units_per_warp, c.k_reg};
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
