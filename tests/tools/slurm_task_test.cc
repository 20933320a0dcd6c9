// strata_launch --slurm's arithmetic (tools/launch/slurm_task.h): which role
// each task of a step is, and the command line a task becomes.
#include "tools/launch/slurm_task.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace strata {
namespace {

TEST(SlurmTaskTest, TaskIdsTakeServersThenFcWorkersThenConvWorkers) {
  auto role = [](int procid) { return *RoleOfTask(procid, 6, 2, 1); };
  EXPECT_EQ(role(0).kind, "server");
  EXPECT_EQ(role(1).kind, "server");
  EXPECT_EQ(role(1).rank, 1);
  EXPECT_EQ(role(2).kind, "fc_worker");
  EXPECT_EQ(role(2).rank, 0);
  EXPECT_EQ(role(3).kind, "conv_worker");
  EXPECT_EQ(role(5).rank, 2);
  auto too_few = RoleOfTask(0, 3, 2, 1);
  EXPECT_EQ(too_few.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(too_few.status().message(),
            "3 tasks cannot hold 2 server(s), 1 FC worker(s) and at least one conv worker: ask "
            "Slurm for more tasks (--ntasks) or give fewer --servers / --fc-workers");
}

ClusterLaunchOptions StanzaJob() {
  ClusterLaunchOptions o;
  o.config_path = "job.json";
  o.bin_dir = "/opt/strata/bin";
  o.mode = "stanza";
  o.servers = 1;
  o.fc_workers = 1;
  o.conv_workers = 99;  // the task count decides
  o.config.training.batch_size = 64;
  o.summary_out = "/shared/summary.json";
  return o;
}

SlurmTask TaskOf(int procid, int localid) {
  SlurmTask t;
  t.procid = procid;
  t.ntasks = 4;
  t.localid = localid;
  t.node = "node2";
  t.nodes = {"node1", "node2"};
  t.cpus_per_task = 3;
  return t;
}

// The value after `flag` in `argv` ("" when absent).
std::string Flag(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

TEST(SlurmTaskTest, ServingTasksBindAllInterfacesOnPortsOfTheirOwnAndAdvertiseTheirHost) {
  SlurmLaunchOptions slurm;  // port base 29500, 4 ports a task
  const std::string coordinator = "tcp://10.0.0.1:29500";
  auto server0 = SlurmTaskCommand(StanzaJob(), TaskOf(0, 0), slurm, coordinator, "10.0.0.1");
  ASSERT_TRUE(server0.ok()) << server0.status();
  EXPECT_EQ(server0->role.kind, "server");
  const std::vector<std::string>& s0 = server0->argv;
  EXPECT_EQ(s0.front(), "/opt/strata/bin/strata_server");
  EXPECT_EQ(Flag(s0, "--bind"), "tcp://0.0.0.0:29500");  // the coordinator's port
  EXPECT_EQ(Flag(s0, "--coordinator"), coordinator);
  EXPECT_EQ(Flag(s0, "--conv-workers"), "2");  // 4 tasks - 1 server - 1 FC worker

  auto fc = SlurmTaskCommand(StanzaJob(), TaskOf(1, 1), slurm, coordinator, "10.0.0.2");
  ASSERT_TRUE(fc.ok()) << fc.status();
  const std::vector<std::string>& f0 = fc->argv;
  EXPECT_EQ(f0.front(), "/opt/strata/bin/strata_fc_worker");
  EXPECT_EQ(Flag(f0, "--bind"), "tcp://0.0.0.0:29505-29508");  // the host's second task
  EXPECT_EQ(Flag(f0, "--advertise"), "10.0.0.2");
  EXPECT_EQ(Flag(f0, "--threads"), "3");  // SLURM_CPUS_PER_TASK
  EXPECT_EQ(Flag(f0, "--summary-out"), "/shared/summary.json");  // FC worker 0 reports

  SlurmTask no_cpus = TaskOf(3, 0);
  no_cpus.cpus_per_task = 0;
  auto conv = SlurmTaskCommand(StanzaJob(), no_cpus, slurm, coordinator, "10.0.0.2");
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_EQ(conv->role.kind, "conv_worker");
  const std::vector<std::string>& c1 = conv->argv;
  EXPECT_EQ(c1.front(), "/opt/strata/bin/strata_conv_worker");
  EXPECT_EQ(Flag(c1, "--rank"), "1");
  EXPECT_EQ(Flag(c1, "--threads"), "1");  // no SLURM_CPUS_PER_TASK: Slurm gave it one CPU
  EXPECT_EQ(Flag(c1, "--bind"), "");      // conv workers serve nothing
  EXPECT_EQ(Flag(c1, "--summary-out"), "");
}

TEST(SlurmTaskTest, ABatchTheConvWorkersCannotShareIsRefused) {
  ClusterLaunchOptions o = StanzaJob();
  o.batch_sizes = {64, 63};  // two jobs; the second's batch does not divide
  auto argv = SlurmTaskCommand(o, TaskOf(0, 0), SlurmLaunchOptions(), "tcp://a:1", "a");
  EXPECT_EQ(argv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(argv.status().message(),
            "training.batch_size 63 is not divisible by the 2 conv workers 4 tasks leave");
}

}  // namespace
}  // namespace strata
