#pragma once
// Meeting the other ranks: the TCPStore (server or client as the
// RendezvousPlan says) under our key prefix, and every rank's host and pid
// (peer_liveness.h), exchanged through it.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <vector>

#include "flashtrain/distributed/peer_liveness.h"
#include "flashtrain/distributed/rendezvous_plan.h"
#include "flashtrain/distributed/watched_wait.h"

namespace flashtrain::distributed {

struct Rendezvous {
  c10::intrusive_ptr<c10d::Store> store;  // prefixed with plan.key_prefix
  std::vector<PeerProcess> peers;         // index = rank
  std::string host;                       // this process's
};

// Blocks until every rank has arrived, at most `timeout` (then throws
// CommunicationError naming the address and the ranks that did not publish).
Rendezvous meet(const Environment& env, const RendezvousPlan& plan, std::chrono::milliseconds timeout);

// After a final barrier: every rank counts itself out; rank 0, whose process
// may serve the store, waits until all have (watched like a collective).
void depart(c10d::Store& store, int rank, int world_size, const WaitWatch& watch);

}  // namespace flashtrain::distributed
