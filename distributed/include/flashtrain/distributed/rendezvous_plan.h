#pragma once
// Who listens and who connects for the TCPStore rendezvous, decided from the
// launcher's environment alone (torch-free, so the decisions are testable).
//
//   torchrun with TORCHELASTIC_USE_AGENT_STORE=True: the elastic agent already
//     serves the store at MASTER_ADDR:MASTER_PORT; every rank, rank 0 included,
//     is a client (listening there again would fail: the port is taken).
//   otherwise (torchrun without the agent store, SLURM, flashtrain --nproc):
//     rank 0 listens and waits for the others; the rest connect.
#include <string>

#include "flashtrain/distributed/environment.h"

namespace flashtrain::distributed {

struct RendezvousPlan {
  std::string host;
  int port = 0;
  bool is_server = false;  // this process listens (rank 0 without an agent store)
  int world_size = 1;      // clients the server waits for
  // Count this process in at the store (every rank but under an agent store,
  // whose server counts no one); the server waits until all have.
  bool count_in = true;
  // Every key of ours lives under this prefix (PrefixStore adds the "/"). It
  // carries torchrun's restart count, so a restarted attempt never reads the
  // keys of the one before.
  std::string key_prefix;

  std::string describe() const;  // "serves 127.0.0.1:29500 for 2 ranks (keys flashtrain)"
};

// `vars` may hold TORCHELASTIC_RESTART_COUNT (a non-negative integer).
// Throws EnvironmentError for a malformed restart count, or when called for a
// single process (there is nothing to meet).
RendezvousPlan plan_rendezvous(const Environment& env, const EnvMap& vars);

}  // namespace flashtrain::distributed
