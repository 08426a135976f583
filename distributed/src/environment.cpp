#include "flashtrain/distributed/environment.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace flashtrain::distributed {
namespace {

const char* const kVariables[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_USE_AGENT_STORE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "SLURM_NTASKS_PER_NODE", "SLURM_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID",
    "TORCHELASTIC_RESTART_COUNT"};

const std::string* find(const EnvMap& vars, const std::string& name) {
  auto it = vars.find(name);
  return it == vars.end() ? nullptr : &it->second;
}

[[noreturn]] void fail(const std::string& message) { throw EnvironmentError(message); }

int parse_int(const std::string& name, const std::string& value, long lo, long hi) {
  if (value.empty()) fail(name + " is set but empty");
  const char* begin = value.c_str();
  char* end = nullptr;
  errno = 0;
  long parsed = std::strtol(begin, &end, 10);
  if (*end != '\0' || end == begin || errno == ERANGE || value[0] == ' ' || value[0] == '+')
    fail(name + "='" + value + "' is not an integer");
  if (parsed < lo || parsed > hi)
    fail(name + "=" + value + " is out of range [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return static_cast<int>(parsed);
}

int get_int(const EnvMap& vars, const std::string& name, long lo, long hi, int fallback) {
  const std::string* v = find(vars, name);
  return v ? parse_int(name, *v, lo, hi) : fallback;
}

bool parse_bool(const std::string& name, const std::string& value) {
  std::string v;
  for (char c : value) v += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off" || v.empty()) return false;
  fail(name + "='" + value + "' is not a boolean (True/False/1/0)");
}

constexpr long kMaxInt = std::numeric_limits<int>::max();

void check_ranks(Environment& env, const std::string& rank_var, const std::string& world_var,
                 const std::string& local_var, const std::string& local_world_var) {
  if (env.rank >= env.world_size)
    fail(rank_var + "=" + std::to_string(env.rank) + " must be < " + world_var + "=" +
         std::to_string(env.world_size));
  if (env.local_world_size > env.world_size)
    fail(local_world_var + "=" + std::to_string(env.local_world_size) + " must be <= " +
         world_var + "=" + std::to_string(env.world_size));
  if (env.local_rank >= env.local_world_size)
    fail(local_var + "=" + std::to_string(env.local_rank) + " must be < " + local_world_var +
         "=" + std::to_string(env.local_world_size));
}

}  // namespace

const char* launcher_name(Launcher launcher) {
  switch (launcher) {
    case Launcher::single_process: return "single-process";
    case Launcher::torchrun: return "torchrun";
    case Launcher::slurm: return "slurm";
  }
  return "?";
}

std::string first_slurm_host(const std::string& nodelist) {
  // Split at the first comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  auto open = first.find('[');
  if (open == std::string::npos) {
    if (first.empty()) fail("SLURM_NODELIST='" + nodelist + "' names no host");
    return first;
  }
  auto close = first.find(']', open);
  if (close == std::string::npos || open == 0)
    fail("SLURM_NODELIST='" + nodelist + "' is malformed");
  std::string prefix = first.substr(0, open);
  std::string range = first.substr(open + 1, close - open - 1);
  std::string item = range.substr(0, range.find(','));
  std::string low = item.substr(0, item.find('-'));
  if (low.empty()) fail("SLURM_NODELIST='" + nodelist + "' is malformed");
  return prefix + low + first.substr(close + 1);
}

Environment parse_environment(const EnvMap& vars) {
  Environment env;
  const bool torchrun = find(vars, "RANK") || find(vars, "WORLD_SIZE");
  const bool slurm = find(vars, "SLURM_PROCID") && find(vars, "SLURM_NTASKS");
  if (torchrun) {
    if (!find(vars, "RANK")) fail("WORLD_SIZE is set but RANK is not");
    if (!find(vars, "WORLD_SIZE")) fail("RANK is set but WORLD_SIZE is not");
    env.launcher = Launcher::torchrun;
    env.world_size = get_int(vars, "WORLD_SIZE", 1, kMaxInt, 1);
    env.rank = get_int(vars, "RANK", 0, kMaxInt, 0);
    env.local_rank = get_int(vars, "LOCAL_RANK", 0, kMaxInt, env.rank);
    env.local_world_size = get_int(vars, "LOCAL_WORLD_SIZE", 1, kMaxInt, env.world_size);
    check_ranks(env, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE");
    if (const auto* v = find(vars, "TORCHELASTIC_USE_AGENT_STORE"))
      env.use_agent_store = parse_bool("TORCHELASTIC_USE_AGENT_STORE", *v);
    if (env.world_size > 1 && !find(vars, "MASTER_ADDR"))
      fail("MASTER_ADDR is not set (WORLD_SIZE=" + std::to_string(env.world_size) + ")");
    if (env.world_size > 1 && !find(vars, "MASTER_PORT"))
      fail("MASTER_PORT is not set (WORLD_SIZE=" + std::to_string(env.world_size) + ")");
  } else if (slurm) {
    env.launcher = Launcher::slurm;
    env.world_size = get_int(vars, "SLURM_NTASKS", 1, kMaxInt, 1);
    env.rank = get_int(vars, "SLURM_PROCID", 0, kMaxInt, 0);
    env.local_rank = get_int(vars, "SLURM_LOCALID", 0, kMaxInt, 0);
    // SLURM_NTASKS_PER_NODE may read "4" or "4(x2)"; take the leading count.
    if (const auto* v = find(vars, "SLURM_NTASKS_PER_NODE")) {
      std::string lead = v->substr(0, v->find('('));
      env.local_world_size = parse_int("SLURM_NTASKS_PER_NODE", lead, 1, kMaxInt);
    } else {
      env.local_world_size = env.world_size;
    }
    check_ranks(env, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE");
    if (const auto* addr = find(vars, "MASTER_ADDR")) {
      env.master_addr = *addr;
    } else if (const auto* nl = find(vars, "SLURM_JOB_NODELIST")) {
      env.master_addr = first_slurm_host(*nl);
    } else if (const auto* nl2 = find(vars, "SLURM_NODELIST")) {
      env.master_addr = first_slurm_host(*nl2);
    } else if (env.world_size > 1) {
      fail("neither MASTER_ADDR nor SLURM_NODELIST is set (SLURM_NTASKS=" +
           std::to_string(env.world_size) + ")");
    }
    if (!find(vars, "MASTER_PORT")) {
      // A port per job, so jobs sharing a node do not collide.
      if (const auto* job = find(vars, "SLURM_JOB_ID"))
        env.master_port = 20000 + parse_int("SLURM_JOB_ID", *job, 0, kMaxInt) % 10000;
    }
  }
  if (const auto* addr = find(vars, "MASTER_ADDR")) {
    if (addr->empty()) fail("MASTER_ADDR is set but empty");
    env.master_addr = *addr;
  }
  if (find(vars, "MASTER_PORT")) env.master_port = get_int(vars, "MASTER_PORT", 1, 65535, 29500);
  return env;
}

EnvMap current_environment() {
  EnvMap vars;
  for (const char* name : kVariables)
    if (const char* v = std::getenv(name)) vars[name] = v;
  return vars;
}

}  // namespace flashtrain::distributed
