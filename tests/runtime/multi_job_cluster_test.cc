// Two jobs sharing one server process and two conv-worker processes
// (strata_server --job a --job b, strata_conv_worker --job a --job b): under
// every sharing policy each job's parameters after K steps equal the same
// job run alone (BSP is deterministic), and a job whose config the servers
// do not know fails with an error naming the difference while the other
// trains to its end.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBatchNormConfig;
using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::RunCommand;

constexpr int kSteps = 12;

class MultiJobClusterTest : public testing::ClusterTest {
 protected:
  std::string Common() const {
    return " --mode ps --conv-workers 2 --threads 2 --max-steps " + std::to_string(kSteps) +
           " --evaluate=false --progress=false";
  }
  // `config` trained alone by strata_launch; its final parameters.
  std::string Alone(const std::string& config, const std::string& name) const {
    const std::string out = dir_ + "/" + name + ".ckpt";
    const auto [code, log] = RunCommand(kBin + "strata_launch --config " + config + Common() +
                                        " --parameters-out " + out);
    EXPECT_EQ(code, 0) << log;
    return out;
  }
  // One server and two conv workers, each process running every config of
  // `server_jobs` / `worker_jobs`; returns the workers' exit codes.
  std::vector<int> Together(const std::vector<std::string>& server_jobs,
                            const std::vector<std::string>& worker_jobs, const std::string& policy,
                            const std::string& out) {
    std::vector<std::string> server = {kBin + "strata_server",
                                       "--rank",
                                       "0",
                                       "--coordinator",
                                       "tcp://127.0.0.1:0",
                                       "--mode",
                                       "ps",
                                       "--conv-workers",
                                       "2",
                                       "--max-steps",
                                       std::to_string(kSteps),
                                       "--ready-file",
                                       dir_ + "/server_" + policy + ".ready"};
    for (const std::string& j : server_jobs) server.insert(server.end(), {"--job", j});
    server_ = std::make_unique<Process>(server, dir_ + "/server_" + policy + ".log");
    const std::string coordinator = server_->WaitForReady(dir_ + "/server_" + policy + ".ready");
    EXPECT_FALSE(coordinator.empty()) << server_->log();
    std::vector<std::unique_ptr<Process>> workers;
    for (int rank = 0; rank < 2; ++rank) {
      std::vector<std::string> argv = {kBin + "strata_conv_worker",
                                       "--mode",
                                       "ps",
                                       "--coordinator",
                                       coordinator,
                                       "--rank",
                                       std::to_string(rank),
                                       "--max-steps",
                                       std::to_string(kSteps),
                                       "--evaluate=false",
                                       "--progress=false",
                                       "--policy",
                                       policy,
                                       "--threads",
                                       "1",
                                       "--timeout",
                                       "20",
                                       "--parameters-out",
                                       out};
      for (const std::string& j : worker_jobs) argv.insert(argv.end(), {"--job", j});
      workers.push_back(std::make_unique<Process>(
          argv, dir_ + "/worker" + std::to_string(rank) + "_" + policy + ".log"));
    }
    std::vector<int> codes;
    for (auto& w : workers) {
      codes.push_back(w->Wait());
      logs_ += w->log();
    }
    return codes;
  }

  std::unique_ptr<Process> server_;
  std::string logs_;
};

TEST_F(MultiJobClusterTest, EachJobComputesWhatItComputesAloneUnderEveryPolicy) {
  const std::string alone_a = Alone(kConfig, "alone_a");
  const std::string alone_b = Alone(kBatchNormConfig, "alone_b");
  for (const std::string policy : {"crossover", "exclusive", "naive"}) {
    SCOPED_TRACE(policy);
    const std::string out = dir_ + "/together_" + policy + ".ckpt";
    const std::vector<int> codes =
        Together({kConfig, kBatchNormConfig}, {kConfig, kBatchNormConfig}, policy, out);
    EXPECT_EQ(codes, (std::vector<int>{0, 0})) << logs_;
    EXPECT_EQ(server_->Wait(), 0) << server_->log();
    // Worker 0 wrote each job's parameters, tagged with the job's id.
    EXPECT_LE(MaxDifference(alone_a, dir_ + "/together_" + policy + ".job1.ckpt"), 1e-6);
    EXPECT_LE(MaxDifference(alone_b, dir_ + "/together_" + policy + ".job2.ckpt"), 1e-6);
    logs_.clear();
  }
}

TEST_F(MultiJobClusterTest, AJobTheServersDoNotKnowFailsByNameAndTheOtherTrainsOn) {
  // The servers' job 2 is the BatchNorm config; the workers bring the
  // default config as job 2.
  const std::string out = dir_ + "/mismatch.ckpt";
  const std::vector<int> codes =
      Together({kConfig, kBatchNormConfig}, {kConfig, kConfig}, "crossover", out);
  EXPECT_EQ(codes, (std::vector<int>{1, 1})) << logs_;
  EXPECT_NE(logs_.find("job 2: "), std::string::npos) << logs_;
  EXPECT_NE(logs_.find("runs another job config than server 0"), std::string::npos) << logs_;
  EXPECT_EQ(logs_.find("job 1: "), std::string::npos) << logs_;  // job 1 did not fail
  // Job 1 trained to its end and wrote its parameters.
  EXPECT_EQ(Parameters(dir_ + "/mismatch.job1.ckpt").empty(), false);
  server_->Interrupt();
}

}  // namespace
}  // namespace strata
