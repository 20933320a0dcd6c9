// The plan of a local cluster (tools/launch/launch_plan.h) for every mode,
// without starting a process: who starts in which order, on which host and
// CPUs, with which command line; what the options may not ask for; and that
// a Slurm task runs the command its role has in a local cluster.
#include "tools/launch/launch_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "flags/cluster_flags.h"
#include "tools/launch/slurm_task.h"

namespace strata {
namespace {

ClusterLaunchOptions Job(const std::string& mode) {
  ClusterLaunchOptions o;
  o.config_path = "job.json";
  o.bin_dir = "/opt/strata/bin";
  o.mode = mode;
  o.servers = 2;
  o.conv_workers = 3;
  o.fc_workers = 2;
  o.config.training.batch_size = 48;
  return o;
}

LaunchPlan Plan(const ClusterLaunchOptions& o) {
  absl::StatusOr<LaunchPlan> plan = PlanLocalCluster(o, 8);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : LaunchPlan{};
}

// "server 0@0" for each process: its label and host, in start order.
std::vector<std::string> Order(const LaunchPlan& plan) {
  std::vector<std::string> order;
  for (const PlannedProcess& p : plan.processes) {
    order.push_back(absl::StrCat(p.label, "@", p.host));
  }
  return order;
}

// The value after `flag` in `argv` ("" when absent).
std::string Flag(const std::vector<std::string>& argv, const std::string& flag) {
  auto it = std::find(argv.begin(), argv.end(), flag);
  return it == argv.end() || it + 1 == argv.end() ? "" : *(it + 1);
}

bool Has(const std::vector<std::string>& argv, const std::string& flag) {
  return std::find(argv.begin(), argv.end(), flag) != argv.end();
}

const LaunchFiles kFiles = {"/tmp/s/summary.json", "", "/tmp/s/server0.ready.json",
                            "/tmp/s/lost_nodes.json"};
const std::string kCoordinator = "ipc:///tmp/s/coordinator";

TEST(LaunchPlanTest, PsStartsTheCoordinatorThenTheServersThenTheConvWorkersOnLoopback) {
  const ClusterLaunchOptions o = Job("ps");  // fc_workers is ignored in ps mode
  const LaunchPlan plan = Plan(o);
  EXPECT_FALSE(plan.stanza);
  EXPECT_EQ(plan.emulated_hosts, 0);
  EXPECT_EQ(Order(plan), (std::vector<std::string>{"server 0@0", "server 1@1", "worker 0@2",
                                                   "worker 1@3", "worker 2@4"}));

  const std::vector<std::string> server0 = CommandOf(o, plan.processes[0], {}, "", kFiles);
  EXPECT_EQ(server0[0], "/opt/strata/bin/strata_server");
  EXPECT_EQ(Flag(server0, "--bind"), "ipc://*");
  EXPECT_EQ(Flag(server0, "--coordinator"), "ipc://*");  // where it will be itself
  EXPECT_EQ(Flag(server0, "--ready-file"), kFiles.ready);
  EXPECT_EQ(Flag(server0, "--lost-nodes-out"), kFiles.lost_nodes);
  EXPECT_EQ(Flag(server0, "--fc-workers"), "0");

  const std::vector<std::string> server1 =
      CommandOf(o, plan.processes[1], {}, kCoordinator, kFiles);
  EXPECT_EQ(Flag(server1, "--coordinator"), kCoordinator);
  EXPECT_EQ(Flag(server1, "--rank"), "1");
  EXPECT_FALSE(Has(server1, "--ready-file"));

  // Conv worker 0 reports in ps mode; no worker binds.
  const std::vector<std::string> worker0 =
      CommandOf(o, plan.processes[2], {}, kCoordinator, kFiles);
  EXPECT_EQ(worker0[0], "/opt/strata/bin/strata_conv_worker");
  EXPECT_EQ(Flag(worker0, "--summary-out"), kFiles.summary);
  EXPECT_FALSE(Has(worker0, "--bind"));
  EXPECT_FALSE(Has(worker0, "--records-out"));
  const std::vector<std::string> worker2 =
      CommandOf(o, plan.processes[4], {}, kCoordinator, kFiles);
  EXPECT_EQ(Flag(worker2, "--rank"), "2");
  EXPECT_FALSE(Has(worker2, "--summary-out"));
}

TEST(LaunchPlanTest, TcpOnLoopbackBindsTheLoopbackAddressOnThePortRange) {
  ClusterLaunchOptions o = Job("ps");
  o.transport = "tcp";
  const std::vector<std::string> server0 = CommandOf(o, Plan(o).processes[0], {}, "", kFiles);
  EXPECT_EQ(Flag(server0, "--bind"), "tcp://127.0.0.1:0");
  EXPECT_EQ(Flag(server0, "--coordinator"), "tcp://127.0.0.1:0");
  o.port_range = "29500-29599";
  EXPECT_EQ(Flag(CommandOf(o, Plan(o).processes[1], {}, kCoordinator, kFiles), "--bind"),
            "tcp://127.0.0.1:29500-29599");
}

TEST(LaunchPlanTest, StanzaStartsTheFcWorkersBeforeTheConvWorkersAndFcWorkerZeroReports) {
  const ClusterLaunchOptions o = Job("stanza");
  LaunchFiles files = kFiles;
  files.records_dir = "/runs/records";
  const LaunchPlan plan = Plan(o);
  EXPECT_TRUE(plan.stanza);
  EXPECT_EQ(Order(plan),
            (std::vector<std::string>{"server 0@0", "server 1@1", "fc worker 0@2", "fc worker 1@3",
                                      "worker 0@4", "worker 1@5", "worker 2@6"}));
  const std::vector<std::string> fc0 = CommandOf(o, plan.processes[2], {}, kCoordinator, files);
  EXPECT_EQ(fc0[0], "/opt/strata/bin/strata_fc_worker");
  EXPECT_EQ(Flag(fc0, "--summary-out"), files.summary);
  EXPECT_EQ(Flag(fc0, "--bind"), "ipc://*");  // conv workers dial it
  EXPECT_EQ(Flag(fc0, "--records-out"), "/runs/records/fc_worker_0.jsonl");
  const std::vector<std::string> worker0 = CommandOf(o, plan.processes[4], {}, kCoordinator, files);
  EXPECT_FALSE(Has(worker0, "--summary-out"));
  EXPECT_EQ(Flag(worker0, "--mode"), "stanza");
  EXPECT_EQ(Flag(worker0, "--records-out"), "/runs/records/conv_worker_0.jsonl");

  const std::vector<TraceSource> records = RecordFilesOf(plan, files.records_dir);
  ASSERT_EQ(records.size(), 5u);  // every worker, no server
  EXPECT_EQ(records[0].records_path, "/runs/records/fc_worker_0.jsonl");
  EXPECT_EQ(records[4].records_path, "/runs/records/conv_worker_2.jsonl");
  EXPECT_EQ(records[4].job_id, 1u);
  EXPECT_TRUE(RecordFilesOf(plan, "").empty());
}

TEST(LaunchPlanTest, SeveralJobsRunInEveryProcessUnderThePolicyWithARecordFilePerJob) {
  ClusterLaunchOptions o = Job("ps");
  o.job_configs = {"a.json", "b.json"};
  o.policy = "crossover";
  o.weights = "2,1";
  const LaunchPlan plan = Plan(o);
  EXPECT_EQ(plan.jobs, 2u);
  EXPECT_TRUE(plan.several);
  const std::vector<std::string> server0 = CommandOf(o, plan.processes[0], {}, "", kFiles);
  EXPECT_EQ(std::count(server0.begin(), server0.end(), "--job"), 2);
  EXPECT_FALSE(Has(server0, "--config"));
  EXPECT_FALSE(Has(server0, "--policy"));  // servers serve every job alike
  const std::vector<std::string> worker1 =
      CommandOf(o, plan.processes[3], {}, kCoordinator, kFiles);
  EXPECT_EQ(Flag(worker1, "--job"), "a.json");
  EXPECT_EQ(Flag(worker1, "--policy"), "crossover");
  EXPECT_EQ(Flag(worker1, "--weights"), "2,1");

  const std::vector<TraceSource> records = RecordFilesOf(plan, "/r");
  ASSERT_EQ(records.size(), 6u);  // 3 conv workers, 2 jobs each
  EXPECT_EQ(records[0].records_path, PathForJob("/r/conv_worker_0.jsonl", 1));
  EXPECT_EQ(records[1].records_path, PathForJob("/r/conv_worker_0.jsonl", 2));
  EXPECT_EQ(records[1].job_id, 2u);
}

TEST(LaunchPlanTest, AnEmulatedNetworkGivesEveryProcessAHostThatItAdvertises) {
  ClusterLaunchOptions o = Job("stanza");
  o.bandwidth = "1gbit";
  const LaunchPlan plan = Plan(o);
  EXPECT_EQ(plan.emulated_hosts, 7);
  EXPECT_EQ(plan.first_rate, "1gbit");
  EXPECT_EQ(Order(plan).back(), "worker 2@6");
  const HostPlace host = {"/run/netns/strata-h2", "10.77.0.3"};
  const std::vector<std::string> fc0 = CommandOf(o, plan.processes[2], host, kCoordinator, kFiles);
  EXPECT_EQ(Flag(fc0, "--bind"), "tcp://0.0.0.0:0");
  EXPECT_EQ(Flag(fc0, "--advertise"), "10.77.0.3");
  const std::vector<std::string> server0 = CommandOf(o, plan.processes[0], host, "", kFiles);
  EXPECT_EQ(Flag(server0, "--coordinator"), "tcp://10.77.0.3:0");
  o.port_range = "29500-29599";
  EXPECT_EQ(Flag(CommandOf(o, plan.processes[2], host, kCoordinator, kFiles), "--bind"),
            "tcp://0.0.0.0:29500-29599");
}

TEST(LaunchPlanTest, ColocatedServersShareTheirConvWorkersHosts) {
  ClusterLaunchOptions o = Job("stanza");
  o.servers = 3;
  o.fc_workers = 1;
  o.colocate_servers = true;
  o.bandwidth = "100mbit";
  const LaunchPlan plan = Plan(o);
  EXPECT_EQ(plan.emulated_hosts, 4);  // 3 conv workers' hosts and the FC worker's
  EXPECT_EQ(Order(plan),
            (std::vector<std::string>{"server 0@0", "server 1@1", "server 2@2", "fc worker 0@3",
                                      "worker 0@0", "worker 1@1", "worker 2@2"}));
  o.servers = 2;
  EXPECT_EQ(PlanLocalCluster(o, 8).status().message(),
            "colocated servers need one server per conv worker, got 2 servers and 3 conv workers");
}

TEST(LaunchPlanTest, ABandwidthScheduleStartsTheNetworkAtItsFirstRate) {
  ClusterLaunchOptions o = Job("ps");
  o.bandwidth_schedule = "10gbit@0,100mbit@30s";
  const LaunchPlan plan = Plan(o);
  EXPECT_EQ(plan.first_rate, "10gbit");
  EXPECT_EQ(plan.emulated_hosts, 5);
  ASSERT_TRUE(plan.bandwidth_schedule.has_value());
  EXPECT_EQ(plan.bandwidth_schedule->size(), 2u);
  o.bandwidth = "1gbit";
  EXPECT_EQ(PlanLocalCluster(o, 8).status().message(),
            "--bandwidth and --bandwidth-schedule both give the link rate: use one");
}

TEST(LaunchPlanTest, PinnedCpusGoToTheProcessesTheyName) {
  ClusterLaunchOptions o = Job("stanza");
  o.cpu_pin = "conv1=2-3,fc0=5";
  o.cpu_schedule = "conv2=50%@0,conv2=none@10s";
  const LaunchPlan plan = Plan(o);
  EXPECT_EQ(plan.processes[2].cpus, (std::vector<int>{5}));     // fc worker 0
  EXPECT_EQ(plan.processes[5].cpus, (std::vector<int>{2, 3}));  // worker 1
  EXPECT_TRUE(plan.processes[4].cpus.empty());
  ASSERT_TRUE(plan.cpu_schedule.has_value());
  EXPECT_EQ(plan.cpu_schedule->size(), 2u);
}

TEST(LaunchPlanTest, OptionsTheClusterCannotHonourAreRefusedNamingTheFlag) {
  const auto refusal = [](const std::function<void(ClusterLaunchOptions&)>& change) {
    ClusterLaunchOptions o = Job("ps");
    change(o);
    const absl::StatusOr<LaunchPlan> plan = PlanLocalCluster(o, 4);
    EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(plan.status().message());
  };
  EXPECT_EQ(refusal([](auto& o) { o.mode = "single"; }), "unknown cluster mode single");
  EXPECT_EQ(refusal([](auto& o) { o.transport = "udp"; }), "--transport udp: use ipc or tcp");
  EXPECT_EQ(refusal([](auto& o) { o.port_range = "29500-29599"; }),
            "--port-range needs tcp: add --transport tcp");
  EXPECT_EQ(refusal([](auto& o) { o.cpu_pin = "conv3=0"; }),
            "--cpu-pin: the cluster has no conv3 (3 conv_workers)");
  EXPECT_EQ(refusal([](auto& o) { o.cpu_schedule = "fc0=50%@0"; }),
            "--cpu-schedule: the cluster has no fc0 (0 fc_workers)");
  EXPECT_NE(refusal([](auto& o) { o.cpu_pin = "conv0=9"; }).find("conv0"), std::string::npos);
  EXPECT_NE(refusal([](auto& o) { o.bandwidth_schedule = "1gbit@5s"; }).find("1gbit@5s"),
            std::string::npos);
}

TEST(LaunchPlanTest, AStartWithoutLostConvWorkersKeepsEveryoneElsesHostAndCpus) {
  ClusterLaunchOptions o = Job("ps");
  o.bandwidth = "1gbit";
  o.cpu_pin = "conv0=1";
  LaunchPlan plan = Plan(o);
  LeaveConvWorkersFrom(1, plan);
  EXPECT_EQ(Order(plan), (std::vector<std::string>{"server 0@0", "server 1@1", "worker 0@2"}));
  EXPECT_EQ(plan.processes[2].cpus, (std::vector<int>{1}));
}

// A Slurm task runs what its role runs in a local cluster; only where it
// binds differs (its host's ports). Server 0 is left out: a local launcher
// tells it where it will bind, Slurm the allocation's coordinator address.
TEST(LaunchPlanTest, ASlurmTaskRunsTheCommandItsRoleHasInALocalCluster) {
  ClusterLaunchOptions o = Job("stanza");
  o.servers = 1;
  o.fc_workers = 1;
  o.conv_workers = 2;
  o.threads_per_worker = 1;
  o.summary_out = kFiles.summary;  // under Slurm, FC worker 0 writes it there itself
  const LaunchPlan plan = Plan(o);
  SlurmTask task;
  task.ntasks = 4;
  task.node = "node1";
  task.nodes = {"node1"};
  const std::string coordinator = "tcp://10.0.0.1:29500";
  const auto without_binding = [](std::vector<std::string> argv) {
    for (const std::string flag : {"--bind", "--advertise", "--ready-file", "--lost-nodes-out"}) {
      auto it = std::find(argv.begin(), argv.end(), flag);
      if (it != argv.end()) argv.erase(it, it + 2);
    }
    return argv;
  };
  for (task.procid = 1; task.procid < task.ntasks; ++task.procid) {
    task.localid = task.procid;
    const absl::StatusOr<SlurmTaskProcess> slurm =
        SlurmTaskCommand(o, task, SlurmLaunchOptions{}, coordinator, "10.0.0.1");
    ASSERT_TRUE(slurm.ok()) << slurm.status();
    const PlannedProcess& local = plan.processes[task.procid];
    EXPECT_EQ(slurm->role.kind, local.role);
    EXPECT_EQ(slurm->role.rank, local.rank);
    EXPECT_EQ(without_binding(slurm->argv),
              without_binding(CommandOf(o, local, {}, coordinator, kFiles)));
  }
}

}  // namespace
}  // namespace strata
