#include "flashrnn/tune/tc_config.h"

#include <sstream>

namespace flashrnn::tune {

std::string describe(const TcConfig& c) {
  std::ostringstream s;
  s << c.threads << " threads (" << c.warps << " warps x " << c.d_groups_per_warp
    << (c.d_groups_per_warp == 1 ? " group" : " groups") << " of 8 head dims), " << c.ctas
    << " CTAs (" << c.batch_tiles << " x " << c.rows << " batch rows per head), R "
    << c.r_registers_per_thread << " registers/thread (~" << c.estimated_registers
    << " in all, cap " << c.register_cap << "), shared memory forward " << c.forward_smem_bytes
    << " B, backward " << c.backward_smem_bytes << " B (prefetch " << c.backward_prefetch << ", "
    << c.backward_stages << " stages)";
  return s.str();
}

}  // namespace flashrnn::tune
