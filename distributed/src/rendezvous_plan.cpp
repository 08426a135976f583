#include "flashtrain/distributed/rendezvous_plan.h"

#include <cctype>

namespace flashtrain::distributed {

RendezvousPlan plan_rendezvous(const Environment& env, const EnvMap& vars) {
  if (!env.is_distributed())
    throw EnvironmentError("plan_rendezvous: a single process (WORLD_SIZE=1) has no rendezvous");
  RendezvousPlan plan;
  plan.host = env.master_addr;
  plan.port = env.master_port;
  plan.world_size = env.world_size;
  const bool agent_store = env.launcher == Launcher::torchrun && env.use_agent_store;
  plan.is_server = env.rank == 0 && !agent_store;
  plan.count_in = !agent_store;
  plan.key_prefix = "flashtrain";
  const auto it = vars.find("TORCHELASTIC_RESTART_COUNT");
  if (it != vars.end()) {
    const std::string& v = it->second;
    bool digits = !v.empty() && v.size() < 10;
    for (char c : v) digits = digits && std::isdigit(static_cast<unsigned char>(c));
    if (!digits)
      throw EnvironmentError("TORCHELASTIC_RESTART_COUNT='" + v + "' is not a non-negative integer");
    plan.key_prefix += "/attempt_" + v;
  }
  return plan;
}

std::string RendezvousPlan::describe() const {
  return std::string(is_server ? "serves " : "connects to ") + host + ":" + std::to_string(port) +
         (is_server ? " for " + std::to_string(world_size) + " ranks" : "") + " (keys " + key_prefix + ")";
}

}  // namespace flashtrain::distributed
