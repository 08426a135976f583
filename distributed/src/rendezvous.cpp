#include "flashtrain/distributed/rendezvous.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include "flashtrain/distributed/watched_wait.h"

namespace flashtrain::distributed {

Rendezvous meet(const Environment& env, const RendezvousPlan& plan, std::chrono::milliseconds timeout) {
  const std::string where = plan.host + ":" + std::to_string(plan.port);
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(plan.port);
  options.isServer = plan.is_server;
  // Each rank that knows the count adds itself to the store's counter (a
  // client without numWorkers would not); the server then waits for all.
  if (plan.count_in) options.numWorkers = static_cast<std::size_t>(plan.world_size);
  options.waitWorkers = plan.count_in;
  options.timeout = timeout;
  Rendezvous out;
  c10::intrusive_ptr<c10d::Store> tcp;
  try {
    tcp = c10::make_intrusive<c10d::TCPStore>(plan.host, options);
  } catch (const c10::Error& e) {
    throw CommunicationError("rank " + std::to_string(env.rank) + ": rendezvous at " + where + " (" +
                             plan.describe() + ") failed: " + e.what_without_backtrace());
  }
  out.store = c10::make_intrusive<c10d::PrefixStore>(plan.key_prefix, tcp);
  out.host = this_host();
  const PeerProcess self{env.rank, out.host, static_cast<long>(getpid())};
  out.store->set("peer/" + std::to_string(env.rank), self.encode());
  for (int r = 0; r < env.world_size; ++r) {
    const std::string key = "peer/" + std::to_string(r);
    try {
      out.store->wait({key}, timeout);
      const std::vector<std::uint8_t> value = out.store->get(key);
      out.peers.push_back(PeerProcess::decode(r, std::string(value.begin(), value.end())));
    } catch (const c10::Error& e) {
      throw CommunicationError("rank " + std::to_string(env.rank) + ": rank " + std::to_string(r) +
                               " did not arrive at the rendezvous " + where + ": " + e.what_without_backtrace());
    }
  }
  return out;
}

void depart(c10d::Store& store, int rank, int world_size, const WaitWatch& watch) {
  try {
    store.add("departed", 1);
    if (rank != 0) return;  // no store access after this
    wait_watched([&] { return store.add("departed", 0) >= world_size; }, "the final departure", watch);
  } catch (const c10::Error& e) {
    throw CommunicationError("rank " + std::to_string(rank) + ": leaving the rendezvous failed: " +
                             e.what_without_backtrace());
  }
}

}  // namespace flashtrain::distributed
