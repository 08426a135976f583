#include "flashrnn/tune/tc_config.h"

#include <sstream>
#include <string>

namespace flashrnn::tune {

std::string describe(const TcConfig& c) {
  std::ostringstream s;
  s << c.threads << " threads (" << c.warps << " warps x " << c.d_groups_per_warp
    << (c.d_groups_per_warp == 1 ? " group" : " groups") << " of 8 head dims"
    << (c.k_split > 1 ? ", x " + std::to_string(c.k_split) + " shares of K" : std::string()) << "), ";
  if (c.cluster > 1)
    s << c.cluster << " CTAs per head (cluster, " << c.cta_dims << " dims each), ";
  s << c.ctas << " CTAs (" << c.batch_tiles << " x " << c.rows << " batch rows"
    << (c.cluster > 1 ? " x " + std::to_string(c.cluster) : std::string()) << " per head), R "
    << c.r_registers_per_thread << " registers/thread";
  if (c.r_shared_ktiles > 0)
    s << " (forward: " << c.r_forward_registers << " in registers, " << c.r_shared_ktiles << " of "
      << c.r_register_ktiles + c.r_shared_ktiles << " k-tiles in shared memory)";
  s << " (cap " << c.register_cap << "), shared memory forward " << c.forward_smem_bytes
    << " B (prefetch " << c.forward_prefetch << (c.forward_slice_exchange ? "; h by CTA slice" : "")
    << "), ";
  if (c.backward) {
    s << "backward " << c.backward_smem_bytes << " B (prefetch " << c.backward_prefetch << ", "
      << c.backward_stages << (c.backward_stages == 1 ? " stage" : " stages");
    if (c.backward_shared_slices > 0)
      s << "; Rᵀ: " << c.backward_register_slices << " of " << c.cluster << " slices in "
        << c.backward_r_registers << " registers, " << c.backward_shared_slices
        << (c.backward_streams ? " streamed through a ring of " + std::to_string(c.backward_ring_slots) +
                                     " in shared memory by a producer warp, " +
                                     std::to_string(c.backward_threads) + " threads"
                               : std::string(" in shared memory"));
    s << ")";
  } else {
    s << "no backward kernel";
  }
  return s.str();
}

}  // namespace flashrnn::tune
