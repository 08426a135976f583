#include "flashtrain/distributed/environment.h"

#include <gtest/gtest.h>

namespace fd = flashtrain::distributed;

namespace {

// The error's message, or "" when parsing succeeds.
std::string error_of(const fd::EnvMap& vars) {
  try {
    fd::parse_environment(vars);
  } catch (const fd::EnvironmentError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Environment, NothingSetIsSingleProcess) {
  auto env = fd::parse_environment({});
  EXPECT_EQ(env.launcher, fd::Launcher::single_process);
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_FALSE(env.is_distributed());
  EXPECT_TRUE(env.is_rank0());
}

TEST(Environment, Torchrun) {
  auto env = fd::parse_environment({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"},
                                    {"LOCAL_WORLD_SIZE", "4"}, {"MASTER_ADDR", "node7"},
                                    {"MASTER_PORT", "29400"},
                                    {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  EXPECT_EQ(env.launcher, fd::Launcher::torchrun);
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 29400);
  EXPECT_TRUE(env.use_agent_store);
  EXPECT_TRUE(env.is_distributed());
  EXPECT_FALSE(env.is_rank0());
}

TEST(Environment, TorchrunOneProcessNeedsNoMaster) {
  auto env = fd::parse_environment({{"RANK", "0"}, {"WORLD_SIZE", "1"}});
  EXPECT_EQ(env.launcher, fd::Launcher::torchrun);
  EXPECT_FALSE(env.is_distributed());
  EXPECT_FALSE(env.use_agent_store);
  auto off = fd::parse_environment({{"RANK", "0"}, {"WORLD_SIZE", "1"},
                                    {"TORCHELASTIC_USE_AGENT_STORE", "False"}});
  EXPECT_FALSE(off.use_agent_store);
}

TEST(Environment, TorchrunErrorsNameTheVariable) {
  fd::EnvMap base{{"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}};
  auto with = [&](fd::EnvMap extra) {
    extra.insert(base.begin(), base.end());
    return error_of(extra);
  };
  EXPECT_NE(with({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK=2 must be < WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "x1"}, {"WORLD_SIZE", "2"}}).find("RANK='x1' is not an integer"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "1"}, {"WORLD_SIZE", "2abc"}}).find("WORLD_SIZE='2abc'"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}).find("RANK=-1 is out of range"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE=0"), std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", ""}}).find("WORLD_SIZE is set but empty"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}}).find("RANK is set but WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(with({{"WORLD_SIZE", "2"}}).find("WORLD_SIZE is set but RANK is not"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "2"},
                  {"LOCAL_WORLD_SIZE", "2"}})
                .find("LOCAL_RANK=2 must be < LOCAL_WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}})
                .find("LOCAL_WORLD_SIZE=3 must be <= WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}).find(
                "MASTER_PORT"),
            std::string::npos);
  EXPECT_NE(with({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "maybe"}})
                .find("TORCHELASTIC_USE_AGENT_STORE='maybe'"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}}).find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}})
                .find("MASTER_PORT is not set"),
            std::string::npos);
}

TEST(Environment, Slurm) {
  auto env = fd::parse_environment({{"SLURM_PROCID", "6"}, {"SLURM_NTASKS", "8"},
                                    {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS_PER_NODE", "4(x2)"},
                                    {"SLURM_NODELIST", "gpu[07-08]"}, {"SLURM_JOB_ID", "123456"}});
  EXPECT_EQ(env.launcher, fd::Launcher::slurm);
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.master_addr, "gpu07");
  EXPECT_EQ(env.master_port, 20000 + 123456 % 10000);
  EXPECT_FALSE(env.use_agent_store);
}

TEST(Environment, SlurmMasterVariablesWin) {
  auto env = fd::parse_environment({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                                    {"SLURM_NODELIST", "a,b"}, {"MASTER_ADDR", "c"},
                                    {"MASTER_PORT", "4000"}});
  EXPECT_EQ(env.master_addr, "c");
  EXPECT_EQ(env.master_port, 4000);
}

TEST(Environment, TorchrunWinsOverSlurm) {
  auto env = fd::parse_environment({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"},
                                    {"MASTER_PORT", "1"}, {"SLURM_PROCID", "0"},
                                    {"SLURM_NTASKS", "1"}});
  EXPECT_EQ(env.launcher, fd::Launcher::torchrun);
  EXPECT_EQ(env.rank, 1);
}

TEST(Environment, SlurmErrors) {
  EXPECT_NE(error_of({{"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "4"}, {"SLURM_NODELIST", "a"}})
                .find("SLURM_PROCID=4 must be < SLURM_NTASKS=4"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "two"}}).find("SLURM_NTASKS='two'"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).find("SLURM_NODELIST"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_NODELIST", "[1-2]"}})
                .find("malformed"),
            std::string::npos);
}

TEST(Environment, FirstSlurmHost) {
  EXPECT_EQ(fd::first_slurm_host("node1"), "node1");
  EXPECT_EQ(fd::first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(fd::first_slurm_host("gpu[01-04,07],cpu1"), "gpu01");
  EXPECT_EQ(fd::first_slurm_host("gpu[3,5-6]"), "gpu3");
  EXPECT_EQ(fd::first_slurm_host("rack[2]-n"), "rack2-n");
}
