// Environment -> rendezvous decisions: who serves the TCPStore, who connects,
// under which key prefix; the backend for a device; the NCCL variables.
#include "flashtrain/distributed/backend_choice.h"
#include "flashtrain/distributed/nccl_environment.h"
#include "flashtrain/distributed/rendezvous_plan.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace fd = flashtrain::distributed;

namespace {

fd::EnvMap torchrun(int rank, bool agent_store) {
  fd::EnvMap vars{{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(rank)},
                  {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29400"}};
  if (agent_store) vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  return vars;
}

fd::RendezvousPlan plan_for(const fd::EnvMap& vars) { return fd::plan_rendezvous(fd::parse_environment(vars), vars); }

}  // namespace

TEST(RendezvousPlan, AgentStoreMakesEveryRankAClient) {
  for (int rank : {0, 1}) {
    const fd::RendezvousPlan plan = plan_for(torchrun(rank, true));
    EXPECT_FALSE(plan.is_server) << "rank " << rank;
    EXPECT_FALSE(plan.count_in) << "rank " << rank;  // the agent's server counts no one
    EXPECT_EQ(plan.host, "10.0.0.7");
    EXPECT_EQ(plan.port, 29400);
  }
}

TEST(RendezvousPlan, WithoutAgentStoreRankZeroServes) {
  const fd::RendezvousPlan r0 = plan_for(torchrun(0, false));
  const fd::RendezvousPlan r1 = plan_for(torchrun(1, false));
  EXPECT_TRUE(r0.is_server);
  EXPECT_FALSE(r1.is_server);
  EXPECT_TRUE(r0.count_in);
  EXPECT_TRUE(r1.count_in);
  EXPECT_EQ(r0.world_size, 2);
  EXPECT_EQ(r0.describe(), "serves 10.0.0.7:29400 for 2 ranks (keys flashtrain)");
  EXPECT_EQ(r1.describe(), "connects to 10.0.0.7:29400 (keys flashtrain)");
  // TORCHELASTIC_USE_AGENT_STORE=False is the same as unset.
  auto vars = torchrun(0, false);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_TRUE(plan_for(vars).is_server);
}

TEST(RendezvousPlan, SlurmRankZeroServesOnTheFirstNode) {
  const fd::EnvMap vars{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "0"},
                        {"SLURM_NTASKS_PER_NODE", "2(x2)"}, {"SLURM_JOB_NODELIST", "gpu[03-04]"},
                        {"SLURM_JOB_ID", "12345"}};
  const fd::RendezvousPlan plan = plan_for(vars);
  EXPECT_TRUE(plan.is_server);
  EXPECT_EQ(plan.host, "gpu03");
  EXPECT_EQ(plan.port, 20000 + 12345 % 10000);
  EXPECT_EQ(plan.world_size, 4);
}

TEST(RendezvousPlan, RestartCountSeparatesAttempts) {
  auto vars = torchrun(1, true);
  vars["TORCHELASTIC_RESTART_COUNT"] = "3";
  EXPECT_EQ(plan_for(vars).key_prefix, "flashtrain/attempt_3");
  vars["TORCHELASTIC_RESTART_COUNT"] = "-1";
  EXPECT_THROW(plan_for(vars), fd::EnvironmentError);
  vars["TORCHELASTIC_RESTART_COUNT"] = "";
  EXPECT_THROW(plan_for(vars), fd::EnvironmentError);
}

TEST(RendezvousPlan, SingleProcessHasNone) {
  EXPECT_THROW(plan_for({}), fd::EnvironmentError);
  EXPECT_THROW(plan_for({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), fd::EnvironmentError);
}

TEST(BackendChoice, FollowsTheDevice) {
  EXPECT_EQ(fd::choose_backend("auto", true), "nccl");
  EXPECT_EQ(fd::choose_backend("auto", false), "store");
  EXPECT_EQ(fd::choose_backend("nccl", true), "nccl");
  EXPECT_EQ(fd::choose_backend("store", false), "store");
  EXPECT_THROW(fd::choose_backend("nccl", false), std::invalid_argument);
  EXPECT_THROW(fd::choose_backend("store", true), std::invalid_argument);
  EXPECT_THROW(fd::choose_backend("gloo", false), std::invalid_argument);
}

TEST(NcclEnvironment, SetsOnlyWhatTheUserLeftUnset) {
  fd::EnvAssignments all = fd::nccl_environment_defaults({});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], (std::pair<std::string, std::string>{"NCCL_NVLS_ENABLE", "0"}));
  EXPECT_EQ(all[1], (std::pair<std::string, std::string>{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"}));
  EXPECT_EQ(all[2], (std::pair<std::string, std::string>{"TORCH_NCCL_ENABLE_TIMING", "1"}));
  // A user's NCCL_NVLS_ENABLE=1 stays (even an empty value counts as set).
  fd::EnvAssignments rest = fd::nccl_environment_defaults({{"NCCL_NVLS_ENABLE", "1"}, {"TORCH_NCCL_ENABLE_TIMING", ""}});
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].first, "TORCH_NCCL_ASYNC_ERROR_HANDLING");
}

TEST(NcclEnvironment, ApplyWritesTheProcessEnvironment) {
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  unsetenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  unsetenv("TORCH_NCCL_ENABLE_TIMING");
  const fd::EnvAssignments applied = fd::apply_nccl_environment_defaults();
  EXPECT_EQ(applied.size(), 2u);
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "1");
  EXPECT_STREQ(std::getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "1");
  EXPECT_STREQ(std::getenv("TORCH_NCCL_ENABLE_TIMING"), "1");
  EXPECT_TRUE(fd::apply_nccl_environment_defaults().empty());  // all set now
  unsetenv("NCCL_NVLS_ENABLE");
  unsetenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");
  unsetenv("TORCH_NCCL_ENABLE_TIMING");
}
