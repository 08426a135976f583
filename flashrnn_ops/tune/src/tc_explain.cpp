#include "flashrnn/tune/tc_explain.h"

#include <sstream>
#include <string>

#include "flashrnn/tune/tc_select.h"
#include "fused/tc_constants.h"

namespace flashrnn::tune {

std::string explain_tc_choice(const DeviceProps& device, const FusedShape& shape) {
  const TcSelection s = select_tc_config(device, shape);
  const int g = cell_gates(shape.cell), e = dtype_bytes(shape.dtype);
  std::ostringstream out;
  out << "tensor-core kernels, " << describe(shape) << " on " << device.name << ": ";
  if (!s.config) {
    out << "do not run\n  binding constraint " << s.binding << ": " << s.reason << "\n";
    for (size_t i = 1; i < s.broken.size(); ++i) out << "  also: " << s.broken[i] << "\n";
    if (s.needs)
      out << "  the case would need "
          << (s.needs->cluster > 1
                  ? "a cluster of " + std::to_string(s.needs->cluster) + " CTAs of "
                  : std::string())
          << s.needs->threads << " threads, R "
          << s.needs->r_registers_per_thread << " registers/thread, shared memory forward "
          << s.needs->forward_smem_bytes << " B, backward " << s.needs->backward_smem_bytes
          << " B\n";
    out << "-> backend=auto runs the alternating backend (backend=fused: the FMA kernels, where "
           "they fit)\n";
    return out.str();
  }
  const TcConfig& c = *s.config;
  out << "run\n";
  if (c.cluster > 1)
    out << "  cluster  " << c.cluster << " CTAs per head (thread-block cluster, sm_90), "
        << c.cta_dims << " head dims each: the fewest of 2 to " << fused::kTcMaxCluster
        << " that split the head's " << shape.head_dim / (8 * c.d_groups_per_warp)
        << " warps evenly, at most " << c.cta_warp_cap << " per CTA"
        << (c.cta_warp_cap < fused::kTcMaxCtaWarps ? " (an even gate count on a device with clusters)" : "")
        << (c.r_shared_ktiles > 0 ? ", with the forward in " + std::to_string(fused::kTcSmemBudget / 1024) +
                                        " KiB of shared memory"
                                  : std::string())
        << "\n";
  out << "  tiling   " << c.threads << " threads = 32 x " << c.warps << " warps"
      << (c.k_split > 1 ? " x " + std::to_string(c.k_split) : std::string()) << "; a warp owns "
      << c.d_groups_per_warp << (c.d_groups_per_warp == 1 ? " group" : " groups")
      << " of 8 head dims of every gate (" << g
      << (g == 1 ? " gate, odd" : g % 2 == 0 ? " gates, even" : " gates, odd")
      << "), warps = " << c.cta_dims << " / " << 8 * c.d_groups_per_warp
      << (c.k_split > 1 ? ", and with " + std::to_string(c.k_split) +
                              " warps per group of dims a share of K each (R over " +
                              std::to_string(fused::kTcMaxRRegisters) + " registers)"
                        : std::string())
      << "\n"
      << "  grid     " << c.ctas << " CTAs = " << shape.heads << " heads x " << c.batch_tiles
      << " tile(s) of " << c.rows << " batch rows";
  if (c.cluster > 1) out << " x " << c.cluster << " CTAs per head";
  out << "\n"
      << "  registers/thread  R " << c.r_registers_per_thread << " = " << g << "·"
      << shape.head_dim << "·" << shape.head_dim << "·" << e << " B / (4 B x " << c.threads
      << " threads" << (c.cluster > 1 ? " x " + std::to_string(c.cluster) + " CTAs" : std::string())
      << ")";
  if (c.r_shared_ktiles > 0)
    out << "; the forward keeps " << c.r_forward_registers << " of them in registers ("
        << c.r_register_ktiles << " of a share's " << c.r_register_ktiles + c.r_shared_ktiles
        << " k-tiles per gate) and " << c.r_shared_ktiles << " k-tiles in shared memory";
  out << ", + at least " << c.working_registers << " working = "
      << c.r_forward_registers + c.working_registers << " of cap " << c.register_cap
      << " (min(" << device.regs_per_thread << ", " << device.regs_per_block << " / "
      << c.threads << "))\n";
  if (c.backward_shared_slices > 0)
    out << "                    the backward (" << c.backward_threads << " threads"
        << (c.backward_streams ? ", a producer warp among them" : "") << ") keeps Rᵀ's first "
        << c.backward_register_slices << " of " << c.cluster << " CTA slices in "
        << c.backward_r_registers << " registers and the other " << c.backward_shared_slices
        << " in shared memory ("
        << (c.backward_streams ? "streamed every step from a packed copy in global memory through a ring of " +
                                     std::to_string(c.backward_ring_slots)
                               : std::string("resident"))
        << ")\n";
  out << "  shared memory     forward " << c.forward_smem_bytes << " B";
  if (c.forward_slice_exchange)  // a slice per source CTA, where its bulk copy lands: more than 16 x (D + 8)
    out << " (h tiles by CTA slice: " << c.cluster << " x " << c.rows << " rows of " << c.cta_dims << " + 8)";
  if (c.backward)
    out << ", backward " << c.backward_smem_bytes << " B (prefetch " << c.backward_prefetch << ": "
        << c.backward_stages << (c.backward_stages == 1 ? " stage of " : " stages of ")
        << c.backward_stage_bytes << " B + two delta tiles"
        << (c.cluster > 1 ? " + two tiles of received sums" : "")
        << (c.backward_ring_slots > 0
                ? (c.backward_streams ? " + a ring of " : " + ") + std::to_string(c.backward_ring_slots) +
                      " slices of Rᵀ of " + std::to_string(c.backward_slice_bytes) + " B; + " +
                      std::to_string(c.backward_static_smem_bytes) + " B static)"
                : std::string(")"));
  out << " of " << device.smem_per_block_optin << " B per block\n";
  if (c.backward)
    out << "-> the fused backend runs the tensor-core kernels (backend=auto picks them)\n";
  else
    out << "-> the fused backend runs the tensor-core forward and the alternating backend's backward "
           "(backend=auto picks them)\n";
  return out.str();
}

}  // namespace flashrnn::tune
