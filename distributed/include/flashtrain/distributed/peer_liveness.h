#pragma once
// Which peer processes are gone. At start-up every rank publishes its host
// name and pid (through the rendezvous store); while a rank waits on a
// collective that takes unusually long, it checks the peers on its own host.
// A peer that has exited (or is a zombie nobody reaped yet) will never join
// the collective, so the waiting rank can fail at once, naming it, instead of
// hanging until the timeout. Peers on other hosts cannot be checked this way;
// for them the timeout remains the bound.
#include <string>
#include <vector>

namespace flashtrain::distributed {

struct PeerProcess {
  int rank = 0;
  std::string host;
  long pid = 0;

  std::string encode() const;  // "host pid"
  // Throws std::invalid_argument for text encode() did not write.
  static PeerProcess decode(int rank, const std::string& text);
  std::string describe() const;  // "rank 1 (pid 4242 on gpu01)"
};

// This machine's host name.
std::string this_host();

// False once `pid` has exited: no such process, or a zombie.
bool process_alive(long pid);

// The peers on `host` (other than `self_rank`) whose process is gone.
std::vector<PeerProcess> gone_local_peers(const std::vector<PeerProcess>& peers, const std::string& host,
                                          int self_rank);

}  // namespace flashtrain::distributed
