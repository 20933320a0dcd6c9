// The parameter server end to end, with real processes on loopback:
// equivalence with single-process training, consistency models, restarts,
// and bad input from a raw ZeroMQ client while honest workers train.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/net/knob_messages.h"
#include "core/net/lane_socket.h"
#include "core/net/ps_wire.h"
#include "core/net/shm_region.h"
#include "core/net/transport.h"
#include "core/train/checkpoint.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::InjectedFaultCount;
using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::ReadFile;
using testing::RunCommand;

class PsClusterTest : public testing::ClusterTest {};

TEST_F(PsClusterTest, TwoWorkersEqualSingleProcessWithTheGlobalBatch) {
  const std::string config = PlainSgdConfig();
  auto [single_code, single_out] =
      RunCommand(kBin + "strata_launch --config " + config +
                 " --mode single --batch-size 64 "
                 "--max-steps 20 --evaluate=false --progress=false --parameters-out " +
                 dir_ + "/single.ckpt");
  ASSERT_EQ(single_code, 0) << single_out;
  // 2 servers, 2 workers, the same global batch; `flags` added, parameters to `out`.
  auto run_ps = [&](const std::string& flags, const std::string& out) {
    return RunCommand(kBin + "strata_launch --config " + config +
                      " --mode ps --servers 2 --conv-workers 2 " + flags +
                      " --batch-size 64 --max-steps 20 --evaluate=false --progress=false "
                      "--parameters-out " +
                      dir_ + "/" + out);
  };
  auto [ps_code, ps_out] = run_ps("", "ps.ckpt");
  ASSERT_EQ(ps_code, 0) << ps_out;
  EXPECT_NE(ps_out.find("final: mode=ps"), std::string::npos) << ps_out;
  EXPECT_LE(MaxDifference(dir_ + "/single.ckpt", dir_ + "/ps.ckpt"), 1e-4f);
  // On one host the data went through shared memory, with both servers.
  for (const char* pair :
       {"[server 0] shares memory with worker 0", "[server 0] shares memory with worker 1",
        "[server 1] shares memory with worker 0", "[server 1] shares memory with worker 1"}) {
    EXPECT_NE(ps_out.find(pair), std::string::npos) << pair << "\n" << ps_out;
  }
  // And the same run with shared memory off gives the same parameters.
  auto [socket_code, socket_out] = run_ps("--shared-memory=false", "socket.ckpt");
  ASSERT_EQ(socket_code, 0) << socket_out;
  EXPECT_EQ(socket_out.find("shares memory"), std::string::npos) << socket_out;
  EXPECT_LE(MaxDifference(dir_ + "/ps.ckpt", dir_ + "/socket.ckpt"), 1e-6f);
}

// A bad network under every process of a ps job (--inject-faults: of what
// each process receives, 2% lost, 2% repeated, 2% delayed and 2% reordered;
// shared memory off, so every message crosses a socket). Lost requests and
// answers are sent again, repeated ones are not applied twice: the job
// finishes with the undisturbed run's parameters (BSP).
TEST_F(PsClusterTest, ABadNetworkLosesNoUpdateAndAppliesNoneTwice) {
  const std::string config = PlainSgdConfig();
  auto run_ps = [&](const std::string& flags, const std::string& out) {
    return RunCommand(kBin + "strata_launch --config " + config +
                      " --mode ps --servers 2 --conv-workers 2 --shared-memory=false " + flags +
                      " --batch-size 64 --max-steps 20 --timeout 30 --evaluate=false "
                      "--progress=false --parameters-out " +
                      dir_ + "/" + out);
  };
  auto [clean_code, clean_out] = run_ps("", "clean.ckpt");
  ASSERT_EQ(clean_code, 0) << clean_out;
  auto [code, out] = run_ps(
      "--inject-faults drop=0.02,duplicate=0.02,delay=0.02,reorder=0.02,delay_ms=30,seed=5",
      "faulty.ckpt");
  ASSERT_EQ(code, 0) << out;
  EXPECT_LE(MaxDifference(dir_ + "/clean.ckpt", dir_ + "/faulty.ckpt"), 1e-6f);
  // The faults happened, and lost requests were sent again.
  EXPECT_GT(InjectedFaultCount(out, "dropped "), 0) << out;
  EXPECT_GT(InjectedFaultCount(out, "duplicated "), 0) << out;
  EXPECT_GT(InjectedFaultCount(out, "reordered "), 0) << out;
  EXPECT_NE(out.find("unanswered requests to the servers again"), std::string::npos) << out;
}

// The lead recorded in the server's closing line "max pull lead N".
int64_t MaxPullLead(const std::string& output) {
  const size_t at = output.find("max pull lead ");
  if (at == std::string::npos) return -1;
  return std::stoll(output.substr(at + 14));
}

// A cluster started by hand: `servers` servers and two conv workers on tcp,
// with the servers' `flags`; worker 1 can be stalled or killed mid-run.
class HandStartedCluster {
 public:
  HandStartedCluster(const std::string& dir, int servers, const std::vector<std::string>& flags,
                     int max_steps, double worker_timeout = 60) {
    auto server_argv = [&](int rank, const std::string& coordinator) {
      std::vector<std::string> argv = {kBin + "strata_server",
                                       "--rank",
                                       std::to_string(rank),
                                       "--coordinator",
                                       coordinator,
                                       "--config",
                                       kConfig,
                                       "--servers",
                                       std::to_string(servers),
                                       "--conv-workers",
                                       "2",
                                       "--max-steps",
                                       std::to_string(max_steps)};
      argv.insert(argv.end(), flags.begin(), flags.end());
      return argv;
    };
    std::vector<std::string> first = server_argv(0, "tcp://127.0.0.1:0");
    first.insert(first.end(), {"--ready-file", dir + "/server0.ready"});
    servers_.push_back(std::make_unique<Process>(first, dir + "/server0.log"));
    coordinator_ = servers_[0]->WaitForReady(dir + "/server0.ready");
    for (int r = 1; r < servers; ++r) {
      servers_.push_back(std::make_unique<Process>(server_argv(r, coordinator_),
                                                   dir + "/server" + std::to_string(r) + ".log"));
    }
    for (int w = 0; w < 2; ++w) {
      workers_.push_back(std::make_unique<Process>(
          std::vector<std::string>{kBin + "strata_conv_worker", "--mode", "ps", "--coordinator",
                                   coordinator_, "--config", kConfig, "--rank", std::to_string(w),
                                   "--threads", "1", "--max-steps", std::to_string(max_steps),
                                   "--timeout", std::to_string(worker_timeout), "--evaluate=false",
                                   "--progress=false"},
          dir + "/worker" + std::to_string(w) + ".log"));
    }
    // Training is under way once every server shares memory with worker 1.
    for (int r = 0; r < servers; ++r) {
      started_ = started_ && !servers_[r]->WaitFor("shares memory with worker 1").empty();
    }
    testing::SleepScaled(absl::Milliseconds(300));
  }

  bool started() const { return started_ && !coordinator_.empty(); }
  Process& server(int r) { return *servers_[r]; }
  Process& worker(int w) { return *workers_[w]; }

 private:
  std::string coordinator_;
  bool started_ = true;
  std::vector<std::unique_ptr<Process>> servers_, workers_;
};

// SSP with s = 2: while worker 1 is stalled, worker 0 runs exactly 2
// iterations ahead and waits there. Under BSP the lead would stay 0, under
// ASP it would grow with the stall, under a bound of s + 1 it would be 3.
TEST_F(PsClusterTest, SspLetsAWorkerRunExactlySIterationsAheadOfAStalledOne) {
  HandStartedCluster cluster(dir_, 2, {"--consistency", "ssp", "--staleness", "2"}, 300);
  ASSERT_TRUE(cluster.started()) << cluster.server(0).log();
  cluster.worker(1).Pause();
  testing::SleepScaled(absl::Milliseconds(1500));
  cluster.worker(1).Resume();
  for (int w = 0; w < 2; ++w) ASSERT_EQ(cluster.worker(w).Wait(), 0) << cluster.worker(w).log();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cluster.server(r).Wait(), 0) << cluster.server(r).log();
    const std::string log = cluster.server(r).log();
    EXPECT_NE(log.find("worker clocks [300 300]"), std::string::npos) << log;
    EXPECT_EQ(MaxPullLead(log), 2) << log;
  }
}

// ASP: a stalled worker holds nobody back (BSP or SSP would). Three
// seconds are dozens of iterations even on a loaded machine.
TEST_F(PsClusterTest, AspLetsAWorkerRunFarAheadOfAStalledOne) {
  HandStartedCluster cluster(dir_, 1, {"--consistency", "asp"}, 600);
  ASSERT_TRUE(cluster.started()) << cluster.server(0).log();
  cluster.worker(1).Pause();
  testing::SleepScaled(absl::Seconds(3));
  cluster.worker(1).Resume();
  for (int w = 0; w < 2; ++w) ASSERT_EQ(cluster.worker(w).Wait(), 0) << cluster.worker(w).log();
  ASSERT_EQ(cluster.server(0).Wait(), 0) << cluster.server(0).log();
  const std::string log = cluster.server(0).log();
  EXPECT_NE(log.find("worker clocks [600 600]"), std::string::npos) << log;
  EXPECT_GE(MaxPullLead(log), 20) << log;
}

// BSP: a worker that dies fails the pulls waiting for it on every server
// (server 1 learns it from the coordinator), naming it; the survivor stops
// with that error, and the servers, left with only dead workers, exit with
// an error instead of waiting for ever.
TEST_F(PsClusterTest, ADeadWorkerFailsThePendingPullsOfEveryServer) {
  HandStartedCluster cluster(dir_, 2, {"--dead-timeout", "2"}, 100000);
  ASSERT_TRUE(cluster.started()) << cluster.server(0).log();
  cluster.worker(1).Kill9();
  EXPECT_EQ(cluster.worker(0).Wait(), 1);
  EXPECT_NE(cluster.worker(0).log().find(
                "worker 1 stopped sending heartbeats; pulls waiting for its iterations cannot "
                "complete"),
            std::string::npos)
      << cluster.worker(0).log();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(cluster.server(r).Wait(), 1);
    const std::string log = cluster.server(r).log();
    EXPECT_NE(log.find("[server " + std::to_string(r) +
                       "] refused a request: worker 1 stopped sending heartbeats"),
              std::string::npos)
        << log;
    // Worker 0 left with its error (LEAVE); worker 1 fell silent.
    EXPECT_NE(log.find("every worker that had not finished has stopped (worker 0 stopped: "),
              std::string::npos)
        << log << cluster.worker(0).log();
    EXPECT_NE(log.find("cannot complete; worker 1 stopped sending heartbeats); the job cannot "
                       "complete"),
              std::string::npos)
        << log;
  }
}

// ASP: nobody waits for a dead worker's iterations, and the servers stop
// waiting for its DONE.
TEST_F(PsClusterTest, AspServersStopWaitingForADeadWorker) {
  HandStartedCluster cluster(dir_, 2, {"--consistency", "asp", "--dead-timeout", "2"}, 300);
  ASSERT_TRUE(cluster.started()) << cluster.server(0).log();
  cluster.worker(1).Kill9();
  ASSERT_EQ(cluster.worker(0).Wait(), 0) << cluster.worker(0).log();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(cluster.server(r).Wait(), 0) << cluster.server(r).log();
    EXPECT_NE(cluster.server(r).log().find("[server " + std::to_string(r) +
                                           "] no longer waits for worker 1 to finish (asp)"),
              std::string::npos)
        << cluster.server(r).log();
  }
}

TEST_F(PsClusterTest, KilledServerRestartsFromItsCheckpointAndTheRunFinishes) {
  const std::string checkpoint = dir_ + "/server0.ckpt";
  std::vector<std::string> server_argv = {kBin + "strata_server",
                                          "--rank",
                                          "0",
                                          "--config",
                                          kConfig,
                                          "--servers",
                                          "1",
                                          "--conv-workers",
                                          "2",
                                          "--max-steps",
                                          "150",
                                          "--checkpoint",
                                          checkpoint,
                                          "--checkpoint-every",
                                          "10",
                                          "--coordinator"};
  auto first_argv = server_argv;
  first_argv.insert(first_argv.end(), {"tcp://127.0.0.1:0", "--ready-file", dir_ + "/first.ready"});
  auto first = std::make_unique<Process>(first_argv, dir_ + "/first.log");
  const std::string address = first->WaitForReady(dir_ + "/first.ready");
  ASSERT_FALSE(address.empty()) << first->log();

  std::vector<std::unique_ptr<Process>> workers;
  for (int w = 0; w < 2; ++w) {
    workers.push_back(std::make_unique<Process>(
        std::vector<std::string>{kBin + "strata_conv_worker", "--mode", "ps", "--coordinator",
                                 address, "--config", kConfig, "--rank", std::to_string(w),
                                 "--threads", "1", "--max-steps", "150", "--evaluate=false",
                                 "--progress=false", "--summary-out", dir_ + "/summary.json"},
        dir_ + "/worker" + std::to_string(w) + ".log"));
  }
  ASSERT_FALSE(first->WaitFor("checkpoint at iteration").empty()) << first->log();
  first->Kill9();  // mid-run, after at least one checkpoint

  auto second_argv = server_argv;
  second_argv.push_back(address);  // same address: the workers reconnect
  second_argv.push_back("--restore");
  Process second(second_argv, dir_ + "/second.log");
  const std::string restored = second.WaitFor("restored");
  ASSERT_FALSE(restored.empty()) << second.log();
  const int64_t from = std::stoll(restored.substr(restored.find("at iteration ") + 13));
  EXPECT_GE(from, 10);

  for (int w = 0; w < 2; ++w) {
    ASSERT_EQ(workers[w]->Wait(), 0) << workers[w]->log();
    EXPECT_NE(workers[w]->log().find("rewound to iteration " + std::to_string(from)),
              std::string::npos)
        << workers[w]->log();
    // The requests the dead server had were sent again once it was back,
    // those on the shared memory lane over the socket.
    EXPECT_NE(workers[w]->log().find("reconnected to server 0; resent "), std::string::npos)
        << workers[w]->log();
    EXPECT_NE(workers[w]->log().find("the shared memory lane to server 0 (" + address +
                                     ") closed (the lane's peer closed it); "),
              std::string::npos)
        << workers[w]->log();
    // The restarted server knew none of the workers' connections: they said
    // hello again, and registered again with it as the coordinator.
    EXPECT_NE(workers[w]->log().find("registering again with the coordinator " + address),
              std::string::npos)
        << workers[w]->log();
    // And the restarted server's lane was opened again.
    EXPECT_NE(
        workers[w]->log().find("reopened the shared memory lane to server 0 (" + address + ")"),
        std::string::npos)
        << workers[w]->log();
    EXPECT_NE(second.log().find("[server 0] shares memory with worker " + std::to_string(w)),
              std::string::npos)
        << second.log();
  }
  ASSERT_EQ(second.Wait(), 0) << second.log();
  EXPECT_NE(second.log().find("worker clocks [150 150]"), std::string::npos) << second.log();
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 150);
}

TEST_F(PsClusterTest, WorkersStopWithAClearErrorWhenTheServerNeverReturns) {
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", kConfig, "--servers", "1", "--conv-workers", "1", "--max-steps",
                  "500", "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  Process worker({kBin + "strata_conv_worker", "--mode", "ps", "--coordinator", address, "--config",
                  kConfig, "--threads", "1", "--max-steps", "500", "--timeout", "3",
                  "--evaluate=false", "--progress=false"},
                 dir_ + "/worker.log");
  ASSERT_FALSE(server.WaitFor("registered").empty());
  testing::SleepScaled(absl::Milliseconds(500));  // let training start
  server.Kill9();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(worker.Wait(), 1);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 30.0);
  EXPECT_NE(worker.log().find("strata_conv_worker: error: "), std::string::npos) << worker.log();
  EXPECT_NE(worker.log().find("from server 0 (" + address + ") within 3s"), std::string::npos)
      << worker.log();
}

TEST_F(PsClusterTest, CtrlCStopsTheWholeClusterWithoutOrphans) {
  // A private copy of the config: its path marks this test's processes.
  const std::string config = dir_ + "/ctrl_c.json";
  std::ofstream(config) << ReadFile(kConfig);
  Process launcher({kBin + "strata_launch", "--config", config, "--mode", "ps", "--servers", "2",
                    "--conv-workers", "2", "--epochs", "5"},
                   dir_ + "/launch.log");
  ASSERT_FALSE(launcher.WaitFor("step 100/").empty()) << launcher.log();
  EXPECT_EQ(testing::CountStrataProcesses(config), 5);  // launcher, 2 servers, 2 workers
  launcher.Interrupt();
  EXPECT_EQ(launcher.Wait(), 1);
  EXPECT_NE(launcher.log().find("interrupted"), std::string::npos) << launcher.log();
  EXPECT_EQ(testing::CountStrataProcesses(config), 0);
}

TEST_F(PsClusterTest, AFailingWorkerStopsTheClusterAndIsNamed) {
  // Worker ranks are fixed by the launcher; a train limit smaller than one
  // global batch makes every worker fail at start with a clear error.
  const std::string config = dir_ + "/fail.json";
  std::ofstream(config) << ReadFile(kConfig);
  auto [code, out] = RunCommand(kBin + "strata_launch --config " + config +
                                " --mode ps --servers 1 --conv-workers 2 --batch-size 60000000");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("strata_launch: error: worker "), std::string::npos) << out;
  EXPECT_NE(out.find("exited with status 1; stopped the cluster"), std::string::npos) << out;
  EXPECT_EQ(testing::CountStrataProcesses(config), 0);
}

// A server plans the run from the config alone: on a host without the data
// set it serves (its step count from data.train_size), and the worker whose
// files disagree with the config stops naming both counts.
TEST_F(PsClusterTest, ServersNeedNoDataSetAndWorkersCheckTheirFilesAgainstTheConfig) {
  const std::string elsewhere = testing::EditedConfig(
      kConfig, R"("path": "/usr/share/datasets/fashion-mnist")",
      R"("path": "/nonexistent/fashion-mnist", "train_size": 60000)");
  const std::string config = dir_ + "/elsewhere.json";
  std::ofstream(config) << elsewhere;
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", config, "--conv-workers", "1", "--ready-file",
                  dir_ + "/server.ready"},
                 dir_ + "/server.log");
  EXPECT_NE(server.WaitForReady(dir_ + "/server.ready"), "") << server.log();
  server.Interrupt();
  server.Wait();

  const std::string smaller = dir_ + "/smaller.json";
  std::ofstream(smaller) << testing::EditedConfig(
      kConfig, R"("path": "/usr/share/datasets/fashion-mnist")",
      R"("path": "/usr/share/datasets/fashion-mnist", "train_size": 1000)");
  auto [code, out] = RunCommand(kBin + "strata_launch --config " + smaller +
                                " --mode ps --servers 1 --conv-workers 1 --progress=false");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("data.train_size: the job plans for 1000 training images but "
                     "/usr/share/datasets/fashion-mnist holds 60000; set data.train_size to "
                     "60000"),
            std::string::npos)
      << out;
  EXPECT_EQ(testing::CountStrataProcesses(smaller), 0);
}

// A worker without --rank that waits longer for the cluster map than its
// re-registration period registers again on the same connection; it keeps
// the rank it was given, and the next worker gets the next one.
TEST_F(PsClusterTest, AWorkerThatWaitsForTheMapKeepsItsRank) {
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", kConfig, "--servers", "1", "--conv-workers", "2", "--max-steps", "20",
                  "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  auto worker = [&](int i) {
    return std::make_unique<Process>(
        std::vector<std::string>{kBin + "strata_conv_worker", "--mode", "ps", "--coordinator",
                                 address, "--config", kConfig, "--threads", "1", "--max-steps",
                                 "20", "--evaluate=false", "--progress=false"},
        dir_ + "/worker" + std::to_string(i) + ".log");
  };
  auto first = worker(0);
  ASSERT_FALSE(server.WaitFor("worker 0 registered (").empty()) << server.log();
  ASSERT_FALSE(server.WaitFor("worker 0 registered again").empty()) << server.log();
  auto second = worker(1);
  ASSERT_EQ(first->Wait(), 0) << first->log();
  ASSERT_EQ(second->Wait(), 0) << second->log();
  ASSERT_EQ(server.Wait(), 0) << server.log();
  EXPECT_NE(server.log().find("worker clocks [20 20]"), std::string::npos) << server.log();
  EXPECT_EQ(server.log().find("worker 1 registered again"), std::string::npos) << server.log();
}

// Writes `token` to a token file of `mode`; returns its path.
std::string TokenFile(const std::string& dir, const std::string& name, const std::string& token,
                      mode_t mode = 0600) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << token << "\n";
  chmod(path.c_str(), mode);
  return path;
}

// A server that requires a job token refuses, by name, a worker with a
// wrong token, one with none, one whose token file others can read, and one
// whose config differs; the honest worker then trains to the end.
TEST_F(PsClusterTest, WorkersWithWrongCredentialsAreRefusedByName) {
  const std::string good = TokenFile(dir_, "good.token", "s3cret-of-this-run");
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", kConfig, "--servers", "1", "--conv-workers", "1", "--max-steps", "20",
                  "--job-token-file", good, "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  EXPECT_EQ(server.log().find("no job token"), std::string::npos) << server.log();
  auto worker = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {kBin + "strata_conv_worker",
                                     "--mode",
                                     "ps",
                                     "--coordinator",
                                     address,
                                     "--config",
                                     kConfig,
                                     "--rank",
                                     "0",
                                     "--threads",
                                     "1",
                                     "--max-steps",
                                     "20",
                                     "--timeout",
                                     "10",
                                     "--evaluate=false",
                                     "--progress=false"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  struct Refusal {
    std::vector<std::string> flags;
    std::string error;
  };
  // A wrong token or none is refused at the connection, before the worker
  // can send anything; it hears why at once.
  const std::vector<Refusal> refusals = {
      {{"--job-token-file", TokenFile(dir_, "wrong.token", "guess")},
       "registering with the coordinator: " + address +
           " refused the connection: it does not take the job token this process presents"},
      {{}, "it takes only connections that present the job token"},
      {{"--job-token-file", TokenFile(dir_, "open.token", "s3cret-of-this-run", 0644)},
       "is readable by others (mode 0644); chmod 600 it"},
      {{"--job-token-file", good, "--batch-size", "32"},
       "worker 0 runs another job config than server 0: training.batch_size differs"},
  };
  for (size_t i = 0; i < refusals.size(); ++i) {
    Process refused(worker(refusals[i].flags), dir_ + "/refused" + std::to_string(i) + ".log");
    EXPECT_EQ(refused.Wait(), 1) << refused.log();
    EXPECT_NE(refused.log().find(refusals[i].error), std::string::npos) << refused.log();
  }
  Process honest(worker({"--job-token-file", good}), dir_ + "/honest.log");
  ASSERT_EQ(honest.Wait(), 0) << honest.log();
  ASSERT_EQ(server.Wait(), 0) << server.log();
  EXPECT_NE(server.log().find("worker clocks [20]"), std::string::npos) << server.log();
  EXPECT_NE(server.log().find("refused a connection from 127.0.0.1: it did not present the job "
                              "token"),
            std::string::npos)
      << server.log();
  EXPECT_NE(server.log().find("refused a connection to " + address + ": "), std::string::npos)
      << server.log();
}

// A raw ZeroMQ client speaking to a live server.
class RawClient {
 public:
  explicit RawClient(const std::string& address) : socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(address);
  }
  // Sends frames; returns the error message of the server's reply (an
  // error, or an answer that carries one).
  std::string Exchange(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      socket_.send(zmq::buffer(frames[i]),
                   i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::seconds(10)) == 0) return "<no reply>";
    RawMessage raw;
    while (true) {
      zmq::message_t m;
      (void)socket_.recv(m);
      const bool more = m.more();
      raw.frames.push_back(std::move(m));
      if (!more) break;
    }
    auto msg = Decode(std::move(raw), WireLimits());
    if (!msg.ok()) return "<undecodable reply>";
    last_iteration_ = msg->header().getIteration();
    if (msg->header().getErrorCode() == 0) return "<not an error>";
    return msg->header().getErrorMessage().cStr();
  }
  // The iteration field of the last reply (a pull reply's version).
  int64_t last_iteration() const { return last_iteration_; }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  int64_t last_iteration_ = -1;
};

// A raw client on a server's shared memory lane.
class RawLaneClient {
 public:
  explicit RawLaneClient(const std::string& address) {
    auto socket = LaneSocket::Connect(address);
    EXPECT_TRUE(socket.ok()) << socket.status();
    if (socket.ok()) socket_ = *std::move(socket);
  }
  // Sends one packet as it is; returns the error message of the server's
  // reply, as RawClient::Exchange does.
  std::string Exchange(const std::string& packet) {
    if (socket_ == nullptr) return "<not connected>";
    if (::send(socket_->fd(), packet.data(), packet.size(), 0) !=
        static_cast<ssize_t>(packet.size())) {
      return "<send failed>";
    }
    return Reply();
  }
  // Sends `message` (with the descriptor it passes); the same answer.
  std::string Exchange(OutgoingMessage& message) {
    if (socket_ == nullptr) return "<not connected>";
    if (!socket_->Send(message).ok()) return "<send failed>";
    return Reply();
  }

 private:
  std::string Reply() {
    if (!socket_->WaitReadable(absl::Seconds(10))) return "<no reply>";
    auto reply = socket_->ReceiveNow();
    if (!reply.ok() || !reply->has_value()) return "<no reply>";
    auto msg = Decode(**std::move(reply), WireLimits());
    if (!msg.ok()) return "<undecodable reply>";
    if (msg->header().getErrorCode() == 0) return "<not an error>";
    return msg->header().getErrorMessage().cStr();
  }

  std::unique_ptr<LaneSocket> socket_;
};

std::string Header(OutgoingMessage& m) { return m.SerializedHeaderForTest(); }

// A HELLO of conv worker `rank` of job 1 with `identity`.
std::string HelloHeader(int rank, const std::string& identity) {
  OutgoingMessage m(wire::Kind::HELLO);
  FillHello(m.header(), JobCredentials{1, "", identity, "", ""}, wire::Role::CONV_WORKER, rank);
  return m.SerializedHeaderForTest();
}

// Stamps a header as sent by conv worker 0 of job 1.
void FromWorker0(wire::Header::Builder h) {
  h.setJobId(1);
  h.setSenderRole(wire::Role::CONV_WORKER);
  h.setSenderRank(0);
}

// Fills `m`, an offer of a shared memory region (whose descriptor comes
// with it on a lane).
void FillAttach(OutgoingMessage& m, uint32_t slots, uint64_t slot_bytes, const std::string& host) {
  auto h = m.header();
  FromWorker0(h);
  BodyOf<wire::ps::Body>(h).setShmSlotCount(slots);
  BodyOf<wire::ps::Body>(h).setShmSlotBytes(slot_bytes);
  BodyOf<wire::ps::Body>(h).setShmHost(host);
}

// The offer's header, as a ZeroMQ peer sends it (without a region).
std::string AttachHeader(uint32_t slots, uint64_t slot_bytes, const std::string& host) {
  OutgoingMessage m(wire::ps::Kind::SHM_ATTACH);
  FillAttach(m, slots, slot_bytes, host);
  return m.SerializedHeaderForTest();
}

// On a lane: the offer with the region behind `fd`.
std::string OfferRegion(RawLaneClient& lane, uint32_t slots, uint64_t slot_bytes, int fd) {
  OutgoingMessage m(wire::ps::Kind::SHM_ATTACH);
  FillAttach(m, slots, slot_bytes, ColocationId());
  m.PassDescriptor(fd);
  return lane.Exchange(m);
}

// A pull of key 0's first chunk (288 floats) into shared memory slot `slot`.
std::string SharedPullHeader(uint32_t slot) {
  OutgoingMessage m(wire::ps::Kind::PULL);
  auto h = m.header();
  FromWorker0(h);
  h.setIteration(-1);
  auto s = BodyOf<wire::ps::Body>(h).initSlices(1);
  s[0].setKey(0);
  s[0].setLength(288);
  BodyOf<wire::ps::Body>(h).initShmSlots(1).set(0, slot);
  return m.SerializedHeaderForTest();
}

// The header of a push of one slice, declaring one data frame of `bytes`.
std::string PushHeader(uint32_t key, uint64_t offset, uint64_t length, uint64_t bytes,
                       uint64_t job = 1, int sender = 0, wire::DataType type = wire::DataType::F32,
                       MessageType kind = wire::ps::Kind::PUSH) {
  OutgoingMessage m(kind);
  auto h = m.header();
  FromWorker0(h);
  h.setDataType(type);
  h.setJobId(job);
  h.setSenderRank(sender);
  h.setIteration(0);
  auto s = BodyOf<wire::ps::Body>(h).initSlices(1);
  s[0].setKey(key);
  s[0].setOffset(offset);
  s[0].setLength(length);
  h.initFrameBytes(1).set(0, bytes);
  return m.SerializedHeaderForTest();
}

// The header of a request of `kind` from worker 0 for `iteration`, naming
// elements [0, 4) of each of `keys` (with a 16-byte data frame each for
// pushes and inits).
std::string FourFloatHeader(MessageType kind, const std::vector<uint32_t>& keys,
                            int64_t iteration) {
  OutgoingMessage m(kind);
  auto h = m.header();
  FromWorker0(h);
  h.setIteration(iteration);
  auto slices = BodyOf<wire::ps::Body>(h).initSlices(static_cast<unsigned>(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) {
    slices[i].setKey(keys[i]);
    slices[i].setLength(4);
  }
  if (kind != wire::ps::Kind::PULL) {
    auto bytes = h.initFrameBytes(static_cast<unsigned>(keys.size()));
    for (size_t i = 0; i < keys.size(); ++i) bytes.set(static_cast<unsigned>(i), 16);
  }
  return m.SerializedHeaderForTest();
}

// The coordinator takes knob messages only on registered connections and
// from the roles that may send them, and names what is wrong with a change.
TEST_F(PsClusterTest, KnobMessagesAreTakenOnlyFromTheirSendersAndCheckedByName) {
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--kv-sizes", "4", "--conv-workers", "1", "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  auto knob_message = [](MessageType kind, wire::Role role, int rank,
                         const std::vector<KnobChange>& knobs) {
    OutgoingMessage m(kind);
    auto h = m.header();
    h.setJobId(1);
    h.setSenderRole(role);
    h.setSenderRank(rank);
    h.setIteration(kind == wire::knob::Kind::KNOB_SET ? -1 : 0);
    SetKnobChanges(h, knobs);
    return m.SerializedHeaderForTest();
  };
  RawClient stranger(address);
  EXPECT_EQ(stranger.Exchange({knob_message(wire::knob::Kind::KNOB_GET, wire::Role::TOOL, -1, {})}),
            "knob-get from a connection that never said hello to server 0 (every connection "
            "registers first)");

  RawClient tool(address);
  OutgoingMessage hello(wire::Kind::HELLO);
  FillHello(hello.header(), JobCredentials{1, "", "", "", ""}, wire::Role::TOOL, -1);
  ASSERT_EQ(tool.Exchange({hello.SerializedHeaderForTest()}), "<not an error>");
  EXPECT_EQ(tool.Exchange({knob_message(wire::knob::Kind::KNOB_LEASE, wire::Role::TOOL, -1, {})}),
            "knob-lease from tool; server 0 takes it only from the job's workers");
  EXPECT_EQ(tool.Exchange({knob_message(wire::knob::Kind::KNOB_SET, wire::Role::TOOL, -1,
                                        {{"moe.chunks", "4", 0}})}),
            "unknown knob \"moe.chunks\" (known: batch.shares, device.sharing, fc.batching, "
            "moe.parallelism, moe.pipeline_chunks, wire.format)");
  EXPECT_EQ(tool.Exchange({knob_message(wire::knob::Kind::KNOB_SET, wire::Role::TOOL, -1,
                                        {{"moe.pipeline_chunks", "4", 0}})}),
            "no process of this job applies knob moe.pipeline_chunks (the job's knobs: none yet)");

  RawClient worker(address);
  ASSERT_EQ(worker.Exchange({HelloHeader(0, "")}), "<not an error>");
  EXPECT_EQ(worker.Exchange({knob_message(wire::knob::Kind::KNOB_LEASE, wire::Role::CONV_WORKER, 0,
                                          {{"bogus", "1", 0}})}),
            "worker 0 declares knob bogus, which the coordinator does not know (batch.shares, "
            "device.sharing, fc.batching, moe.parallelism, moe.pipeline_chunks, wire.format)");
  EXPECT_EQ(worker.Exchange({knob_message(wire::knob::Kind::KNOB_LEASE, wire::Role::CONV_WORKER, 0,
                                          {{"moe.pipeline_chunks", "1", 0}})}),
            "<not an error>");
  EXPECT_EQ(
      tool.Exchange({knob_message(wire::knob::Kind::KNOB_SET, wire::Role::TOOL, -1,
                                  {{"moe.pipeline_chunks", "0", 0}})}),
      "moe.pipeline_chunks=0: the pipelining degree must be an integer in [1, 64], got \"0\"");
  EXPECT_EQ(tool.Exchange({knob_message(wire::knob::Kind::KNOB_SET, wire::Role::TOOL, -1,
                                        {{"moe.pipeline_chunks", "2", 0}})}),
            "<not an error>");
}

// A request naming several chunks is checked whole: when one of them cannot
// take the push, none of them changes.
TEST_F(PsClusterTest, APushIsCheckedWholeBeforeAnyOfItsChunksChanges) {
  Process server(
      {kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0", "--kv-sizes",
       "4,4", "--conv-workers", "1", "--ready-file", dir_ + "/server.ready"},
      dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();
  RawClient worker(address);
  const std::string floats(16, '\0');
  ASSERT_EQ(worker.Exchange({HelloHeader(0, "")}), "<not an error>");
  for (uint32_t key : {0u, 1u}) {
    ASSERT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::INIT, {key}, 0), floats}),
              "<not an error>");
  }
  ASSERT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PUSH, {1}, 0), floats}),
            "<not an error>");  // key 1 is at iteration 1, key 0 still at 0
  // Key 1 could take iteration 1, key 0 cannot.
  EXPECT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PUSH, {1, 0}, 1), floats, floats}),
            "BSP push for iteration 1 of key 0 while the server is at 0 (a worker ran ahead "
            "without pulling)");
  ASSERT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PULL, {1}, -1)}), "<not an error>");
  EXPECT_EQ(worker.last_iteration(), 1);  // unchanged
  // Its iteration 1 was not recorded either: it is applied now.
  ASSERT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PUSH, {1}, 1), floats}),
            "<not an error>");
  ASSERT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PULL, {1}, -1)}), "<not an error>");
  EXPECT_EQ(worker.last_iteration(), 2);
  EXPECT_EQ(worker.Exchange({FourFloatHeader(wire::ps::Kind::PUSH, {0, 0}, 0), floats, floats}),
            "push names chunk 0 of key 0 twice");
  server.Kill9();
}

TEST_F(PsClusterTest, BadInputGetsErrorRepliesAndHonestWorkersAreUnaffected) {
  // Reference: an undisturbed run of one worker.
  auto [ref_code, ref_out] =
      RunCommand(kBin + "strata_launch --config " + kConfig +
                 " --mode ps --servers 1 --conv-workers 1 "
                 "--max-steps 30 --evaluate=false --progress=false --parameters-out " +
                 dir_ + "/ref.ckpt");
  ASSERT_EQ(ref_code, 0) << ref_out;

  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--config", kConfig, "--servers", "1", "--conv-workers", "1", "--max-steps", "30",
                  "--max-message-mb", "8", "--ready-file", dir_ + "/server.ready"},
                 dir_ + "/server.log");
  const std::string address = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(address.empty()) << server.log();

  // A stranger that never says hello is refused whatever it sends,
  // SHUTDOWN included.
  RawClient stranger(address);
  const std::string not_registered =
      " from a connection that never said hello to server 0 (every connection registers first)";
  OutgoingMessage shutdown(wire::Kind::SHUTDOWN);
  shutdown.header().setJobId(1);
  shutdown.header().setSenderRole(wire::Role::LAUNCHER);
  EXPECT_EQ(stranger.Exchange({Header(shutdown)}), "shutdown" + not_registered);
  EXPECT_EQ(stranger.Exchange({PushHeader(0, 0, 288, 1152), std::string(1152, 'x')}),
            "push" + not_registered);
  EXPECT_EQ(stranger.Exchange({SharedPullHeader(0)}), "pull" + not_registered);

  // The attacker says hello (the cluster is open: no token) as worker 0;
  // then everything it sends is checked on its merits. Before any worker:
  // keys are not initialised, but structural checks come first.
  RawClient attacker(address);
  const std::string identity = testing::DefaultJobIdentity(30);
  EXPECT_EQ(attacker.Exchange({HelloHeader(0, "")}),
            "worker 0 runs another job config than server 0: (the whole document) differs (every "
            "process of a job needs the same config and overrides)");
  EXPECT_EQ(attacker.Exchange({HelloHeader(0, identity)}), "<not an error>");
  EXPECT_EQ(attacker.Exchange({Header(shutdown)}),
            "shutdown claiming to come from launcher on the connection of worker 0");
  OutgoingMessage worker_shutdown(wire::Kind::SHUTDOWN);
  FromWorker0(worker_shutdown.header());
  EXPECT_EQ(attacker.Exchange({Header(worker_shutdown)}),
            "shutdown from worker 0; server 0 takes it only from a launcher or tool");
  EXPECT_NE(attacker.Exchange({"garbage bytes!!"}).find("malformed header"), std::string::npos);
  OutgoingMessage pull(wire::ps::Kind::PULL);
  FromWorker0(pull.header());
  BodyOf<wire::ps::Body>(pull.header()).initSlices(3);
  const std::string h = Header(pull);
  EXPECT_NE(attacker.Exchange({h.substr(0, 16)}).find("malformed header"), std::string::npos);
  OutgoingMessage version(wire::ps::Kind::PULL);
  version.header().setMajor(1);
  version.header().setMinor(1);
  EXPECT_EQ(attacker.Exchange({Header(version)}),
            "peer speaks protocol version 1.1, this node speaks 3." +
                std::to_string(wire::PROTOCOL_MINOR) + " (major versions must match)");
  EXPECT_EQ(attacker.Exchange({PushHeader(99, 0, 4, 16), std::string(16, 'x')}),
            "push of unknown key 99 (the model has 8 keys)");
  EXPECT_EQ(attacker.Exchange({PushHeader(0, 0, 288, 12), std::string(12, 'x')}),
            "push of key 0: data frame 0 has 12 bytes, expected 1152 (288 fp32 values)");
  // Half the bytes in bf16; initial values only in fp32; no other types.
  EXPECT_EQ(attacker.Exchange({PushHeader(0, 0, 288, 1152, 1, 0, wire::DataType::BF16),
                               std::string(1152, 'x')}),
            "push of key 0: data frame 0 has 1152 bytes, expected 576 (288 bf16 values)");
  EXPECT_EQ(attacker.Exchange(
                {PushHeader(0, 0, 288, 576, 1, 0, wire::DataType::BF16, wire::ps::Kind::INIT),
                 std::string(576, 'x')}),
            "init in bf16: initial values travel as fp32");
  EXPECT_EQ(attacker.Exchange({PushHeader(0, 0, 288, 1152, 1, 0, static_cast<wire::DataType>(9)),
                               std::string(1152, 'x')}),
            "push of unknown data type 9");
  EXPECT_EQ(attacker.Exchange({PushHeader(0, 0, 100, 400), std::string(400, 'x')}),
            "push of key 0 elements [0, 100) does not match a chunk of the partition plan");
  EXPECT_EQ(attacker.Exchange({PushHeader(0, 0, 288, 1152, /*job=*/77), std::string(1152, 'x')}),
            "unknown job id 77 (server 0 serves job 1)");
  const std::string oversize =
      attacker.Exchange({PushHeader(2, 0, 1 << 20, 10 << 20), std::string(10 << 20, 'x')});
  EXPECT_NE(oversize.find("exceeds the limit of 8388608 bytes"), std::string::npos) << oversize;
  // Shared memory: slots without a region; an offer from elsewhere, or
  // over the socket (a region comes as a descriptor on a lane, below).
  EXPECT_EQ(attacker.Exchange({SharedPullHeader(0)}),
            "pull names shared memory slots, but its sender attached none");
  EXPECT_EQ(attacker.Exchange({AttachHeader(4, 64, "elsewhere/net:[1]")}),
            "no shared memory: the sender runs on elsewhere/net:[1], this server on " +
                ColocationId() + " (another host or network namespace)");
  EXPECT_EQ(attacker.Exchange({AttachHeader(4, 64, ColocationId())}),
            "no shared memory: a region comes as a descriptor on a shared memory lane (protocol "
            "2.5), and this offer brought none");

  // The server's shared memory lane checks what it carries the same way.
  const std::string lane_address =
      nlohmann::json::parse(testing::ReadFile(dir_ + "/server.ready")).value("lane", "");
  ASSERT_FALSE(lane_address.empty()) << testing::ReadFile(dir_ + "/server.ready");
  RawLaneClient lane(lane_address);
  EXPECT_EQ(lane.Exchange(SharedPullHeader(0)), "pull" + not_registered);
  EXPECT_EQ(lane.Exchange(HelloHeader(0, identity)), "<not an error>");
  EXPECT_NE(lane.Exchange("garbage bytes!!").find("malformed header"), std::string::npos);
  EXPECT_EQ(lane.Exchange(std::string(70000, 'x')),
            "a 70000-byte lane packet exceeds the limit of 65536 bytes (discarded)");
  OutgoingMessage enrol(wire::Kind::REGISTER);
  FromWorker0(enrol.header());
  EXPECT_EQ(lane.Exchange(Header(enrol)),
            "register over a shared memory lane; the coordinator listens on " + address);
  EXPECT_EQ(lane.Exchange(PushHeader(0, 0, 288, 1152)),
            "push header declares 1 data frames, 0 arrived");
  EXPECT_EQ(lane.Exchange(SharedPullHeader(0)),
            "pull names shared memory slots, but its sender attached none");
  // Offers that do not hold: a layout past the limits, a region of another
  // size, memory that could shrink under the server (which would fault on
  // its next access: SIGBUS), a descriptor that is no memory file.
  auto region = ShmRegion::Create(4, 64);
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_EQ(OfferRegion(lane, 0, 64, (*region)->fd()),
            "shared memory of 0 slots of 64 bytes: a region has 1 to 4096 slots of 4 bytes to "
            "67108864 bytes (a multiple of 4)");
  EXPECT_EQ(OfferRegion(lane, 8, 64, (*region)->fd()),
            "the shared memory offered holds 4352 bytes, not the announced 4608");
  const int unsealed = ::memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(::ftruncate(unsealed, 4352), 0);
  EXPECT_EQ(OfferRegion(lane, 4, 64, unsealed),
            "the shared memory offered is not sealed against shrinking");
  ::close(unsealed);
  EXPECT_NE(OfferRegion(lane, 4, 64, STDERR_FILENO)
                .find("the shared memory offered is not a sealable memory file"),
            std::string::npos);
  EXPECT_EQ(OfferRegion(lane, 4, 64, (*region)->fd()), "<not an error>");
  // The owner cannot shrink what the server mapped, nor replace it.
  EXPECT_EQ(::ftruncate((*region)->fd(), 0), -1);
  EXPECT_EQ(errno, EPERM);
  auto another = ShmRegion::Create(4, 64);
  ASSERT_TRUE(another.ok()) << another.status();
  EXPECT_EQ(OfferRegion(lane, 4, 64, (*another)->fd()),
            "this connection has attached a shared memory region already; it keeps that one");
  EXPECT_EQ(lane.Exchange(SharedPullHeader(999)),
            "pull: shared memory slot 999 is outside [0, 4)");
  EXPECT_EQ(lane.Exchange(SharedPullHeader(1)),
            "pull of key 0: 1152 bytes do not fit a shared memory slot of 64");

  // Now the honest worker trains while the attacker keeps sending garbage.
  Process worker({kBin + "strata_conv_worker", "--mode", "ps", "--coordinator", address, "--config",
                  kConfig, "--threads", "1", "--max-steps", "30", "--evaluate=false",
                  "--progress=false", "--parameters-out", dir_ + "/attacked.ckpt"},
                 dir_ + "/worker.log");
  for (int i = 0; i < 20; ++i) {
    const std::string impostor =
        attacker.Exchange({PushHeader(0, 0, 288, 1152, 1, /*sender=*/5), std::string(1152, 'x')});
    EXPECT_EQ(impostor, "push claiming to come from worker 5 on the connection of worker 0");
    EXPECT_EQ(stranger.Exchange({Header(shutdown)}), "shutdown" + not_registered);
    EXPECT_NE(attacker.Exchange({"more garbage"}).find("malformed"), std::string::npos);
    EXPECT_NE(lane.Exchange("lane garbage").find("malformed"), std::string::npos);
  }
  ASSERT_EQ(worker.Wait(), 0) << worker.log();
  ASSERT_EQ(server.Wait(), 0) << server.log();
  // The honest worker had its own lane beside the attacker's.
  EXPECT_NE(server.log().find("[server 0] shares memory with worker 0"), std::string::npos)
      << server.log();
  EXPECT_NE(server.log().find("requests refused"), std::string::npos);
  EXPECT_LE(MaxDifference(dir_ + "/ref.ckpt", dir_ + "/attacked.ckpt"), 1e-6f);
}

}  // namespace
}  // namespace strata
