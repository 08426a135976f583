#include "flashtrain/distributed/make_communicator.h"

#include <ostream>

#include "flashtrain/distributed/backend_choice.h"
#include "flashtrain/distributed/c10d_communicator.h"
#include "flashtrain/distributed/local_launcher.h"
#include "flashtrain/distributed/nccl_backend.h"
#include "flashtrain/distributed/nccl_environment.h"
#include "flashtrain/distributed/rendezvous.h"
#include "flashtrain/distributed/store_communicator.h"

namespace flashtrain::distributed {

std::shared_ptr<Communicator> make_communicator(const Environment& env, const EnvMap& vars,
                                                const CommunicatorOptions& options, std::ostream& log) {
  if (!env.is_distributed()) return std::make_shared<SingleProcessCommunicator>();
  const std::string backend = choose_backend(options.backend, options.device.is_cuda());
  if (backend == "nccl") {
    // Before the process group reads them.
    for (const auto& [name, value] : apply_nccl_environment_defaults()) log << "set " << name << "=" << value << "\n";
  }
  const RendezvousPlan plan = plan_rendezvous(env, vars);
  const auto local_launch = vars.find(kLauncherVariable);  // torchrun's variables, set by --nproc
  log << "rendezvous: " << (local_launch != vars.end() ? local_launch->second.c_str() : launcher_name(env.launcher))
      << ", rank " << env.rank << " of " << env.world_size
      << " " << plan.describe() << std::endl;
  Rendezvous meeting = meet(env, plan, options.timeout);

  WaitWatch watch;
  watch.rank = env.rank;
  watch.timeout = options.timeout;
  watch.gone_peers = [peers = meeting.peers, host = meeting.host, rank = env.rank] {
    std::vector<std::string> names;
    for (const PeerProcess& p : gone_local_peers(peers, host, rank)) names.push_back(p.describe());
    return names;
  };
  if (backend == "store") return std::make_shared<StoreCommunicator>(meeting.store, env.rank, env.world_size, watch);

  // The watchdog's limit is a minute past ours, so that our wait (which names
  // the gone peer) fires first and the watchdog stays the backstop.
  auto group = make_nccl_backend(meeting.store, env.rank, env.world_size, options.device,
                                 options.timeout + std::chrono::minutes(1));
  return std::make_shared<C10dCommunicator>(group, meeting.store, options.device, watch, "nccl");
}

}  // namespace flashtrain::distributed
