#include "flashtrain/distributed/peer_liveness.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace flashtrain::distributed {

std::string PeerProcess::encode() const { return host + " " + std::to_string(pid); }

PeerProcess PeerProcess::decode(int rank, const std::string& text) {
  std::istringstream in(text);
  PeerProcess peer;
  peer.rank = rank;
  if (!(in >> peer.host >> peer.pid) || peer.pid <= 0 || !(in >> std::ws).eof())
    throw std::invalid_argument("rank " + std::to_string(rank) + " published '" + text +
                                "', not 'host pid'");
  return peer;
}

std::string PeerProcess::describe() const {
  return "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + " on " + host + ")";
}

std::string this_host() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
  // A zombie still answers kill(); its state in /proc/<pid>/stat is Z. The
  // state follows the command name in parentheses, which may hold spaces.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return true;  // no /proc: trust kill()
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return true;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

std::vector<PeerProcess> gone_local_peers(const std::vector<PeerProcess>& peers, const std::string& host,
                                          int self_rank) {
  std::vector<PeerProcess> gone;
  for (const PeerProcess& peer : peers)
    if (peer.rank != self_rank && peer.host == host && !process_alive(peer.pid)) gone.push_back(peer);
  return gone;
}

}  // namespace flashtrain::distributed
