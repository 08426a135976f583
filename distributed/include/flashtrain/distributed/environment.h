#pragma once
// The launcher's environment (torchrun, SLURM, or none) as plain values.
// Pure: parse_environment takes a map of variables, so tests need no real
// environment; current_environment() snapshots the process's.
#include <map>
#include <stdexcept>
#include <string>

namespace flashtrain::distributed {

enum class Launcher { single_process, torchrun, slurm };

const char* launcher_name(Launcher launcher);

struct Environment {
  Launcher launcher = Launcher::single_process;
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Under torchrun the agent owns the TCPStore: every rank is a client.
  bool use_agent_store = false;

  bool is_distributed() const { return world_size > 1; }
  bool is_rank0() const { return rank == 0; }
};

// A malformed or inconsistent variable; the message names it.
class EnvironmentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using EnvMap = std::map<std::string, std::string>;

// torchrun (RANK and WORLD_SIZE set) wins over SLURM (SLURM_PROCID and
// SLURM_NTASKS set); neither gives a single process.
Environment parse_environment(const EnvMap& vars);

// The first host of a SLURM node list: "gpu[01-04,07],cpu1" -> "gpu01".
std::string first_slurm_host(const std::string& nodelist);

// The variables parse_environment reads, from the process's environment.
EnvMap current_environment();

}  // namespace flashtrain::distributed
