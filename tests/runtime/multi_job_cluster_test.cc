// Two jobs sharing one server process and two conv-worker processes
// (strata_server --job a --job b, strata_conv_worker --job a --job b): under
// every sharing policy each job's parameters after K steps equal the same
// job run alone (BSP is deterministic), and a job whose config the servers
// do not know fails with an error naming the difference while the other
// trains to its end.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/control/iteration_record.h"
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
  // A ps conv worker of rank `rank` at `coordinator`, one thread, its jobs
  // given by `job_flags` (--job ... or --config ... --job-id N), its
  // parameters written to `out`, its output to `log`.
  static std::unique_ptr<Process> Worker(const std::string& coordinator, int rank,
                                         const std::vector<std::string>& job_flags,
                                         const std::string& out, const std::string& log) {
    std::vector<std::string> argv = {kBin + "strata_conv_worker",
                                     "--mode",
                                     "ps",
                                     "--coordinator",
                                     coordinator,
                                     "--rank",
                                     std::to_string(rank),
                                     "--evaluate=false",
                                     "--progress=false",
                                     "--threads",
                                     "1",
                                     "--timeout",
                                     "30",
                                     "--parameters-out",
                                     out};
    argv.insert(argv.end(), job_flags.begin(), job_flags.end());
    return std::make_unique<Process>(argv, log);
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
    std::vector<std::string> flags = {"--max-steps", std::to_string(kSteps), "--policy", policy};
    for (const std::string& j : worker_jobs) flags.insert(flags.end(), {"--job", j});
    for (int rank = 0; rank < 2; ++rank) {
      workers.push_back(Worker(coordinator, rank, flags, out,
                               dir_ + "/worker" + std::to_string(rank) + "_" + policy + ".log"));
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

// Conv worker 0's records of job `job` in `dir` (strata_launch --records-dir).
std::vector<nlohmann::json> RecordsOf(const std::string& dir, int job) {
  absl::StatusOr<std::vector<nlohmann::json>> records =
      ReadIterationRecords(dir + "/conv_worker_0.job" + std::to_string(job) + ".jsonl");
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<nlohmann::json>();
}

// The default job and its BatchNorm variant through strata_launch, ps mode,
// one worker process, under crossover with `weights` ("" = equal), each
// process writing its records into `records`; the exit code and output.
std::pair<int, std::string> RunCrossoverPair(int steps, const std::string& weights,
                                             const std::string& records) {
  return RunCommand(kBin + "strata_launch --jobs " + kConfig + "," + kBatchNormConfig +
                    " --mode ps --conv-workers 1 --threads 2 --max-steps " + std::to_string(steps) +
                    " --evaluate=false --progress=false --policy crossover" +
                    (weights.empty() ? "" : " --weights " + weights) + " --records-dir " + records);
}

// Equal weights, read from the recorded timeline: no wait for the device
// outlasts one iteration of the other job (start to next start).
TEST_F(MultiJobClusterTest, UnderCrossoverNoJobWaitsForTheDeviceLongerThanAnIterationOfTheOther) {
  const std::string records = dir_ + "/records";
  const auto [code, log] = RunCrossoverPair(30, "", records);
  ASSERT_EQ(code, 0) << log;
  const std::vector<nlohmann::json> jobs[2] = {RecordsOf(records, 1), RecordsOf(records, 2)};
  for (int j = 0; j < 2; ++j) {
    const std::vector<nlohmann::json>& mine = jobs[j];
    const std::vector<nlohmann::json>& other = jobs[1 - j];
    ASSERT_EQ(mine.size(), 30u);
    double longest_other = 0;  // the first iteration is start-up
    for (size_t i = 1; i + 1 < other.size(); ++i) {
      longest_other = std::max(
          longest_other, other[i + 1]["start"].get<double>() - other[i]["start"].get<double>());
    }
    double longest_wait = 0, waited = 0;
    for (size_t i = 1; i < mine.size(); ++i) {
      for (const Span& span : SpansOfRecord(mine[i])) {
        if (span.kind != SpanKind::kDeviceWait) continue;
        longest_wait = std::max(longest_wait, span.end - span.start);
        waited += span.end - span.start;
      }
    }
    EXPECT_GT(waited, 0.0) << "job " << j + 1 << " never waited: the jobs did not share";
    EXPECT_LE(longest_wait, longest_other) << "job " << j + 1;
  }
}

// With weights 1:3, read from the recorded timeline: the device time the
// jobs contended for splits about 1:3. A job waits for the device only
// while the other holds it, so each job's contested time is the other's
// waits for the device. The bound (25% +- a fifth) leaves room for a
// shared machine; yielding only at phase starts, not between layers, gave
// 32-39% here, and ignoring the weights about 45-50%.
TEST_F(MultiJobClusterTest, UnderCrossoverWeightsSplitTheContestedDeviceTime) {
  const std::string records = dir_ + "/records";
  const auto [code, log] = RunCrossoverPair(40, "1,3", records);
  ASSERT_EQ(code, 0) << log;
  double waited[2] = {0, 0};
  for (int j = 0; j < 2; ++j) {
    const std::vector<nlohmann::json> mine = RecordsOf(records, j + 1);
    ASSERT_EQ(mine.size(), 40u);
    for (size_t i = 1; i < mine.size(); ++i) waited[j] += DeviceWaitSeconds(mine[i]);
  }
  ASSERT_GT(waited[0] + waited[1], 0.0) << "the jobs did not share";
  const double share_of_job_1 = waited[1] / (waited[0] + waited[1]);
  std::printf("job 1's share of the contested device time: %.3f\n", share_of_job_1);
  EXPECT_GT(share_of_job_1, 0.20) << log;
  EXPECT_LT(share_of_job_1, 0.30) << log;
}

// device.sharing, set for job 2 while both run under crossover: from the
// agreed iteration on, job 2 computes whenever it likes (naive) and never
// waits for the device; job 1, now alone in the turns, waits no more either.
TEST_F(MultiJobClusterTest, AJobSetToNaiveSharingStopsWaitingForTheDevice) {
  WriteTokens("device-sharing-test-token");
  const std::string records = dir_ + "/records";
  Process run({"/bin/sh", "-c",
               kBin + "strata_launch --jobs " + kConfig + "," + kBatchNormConfig +
                   " --mode ps --conv-workers 1 --threads 2 --max-steps 120 --evaluate=false "
                   "--progress=false --policy crossover " + TokenFlags() + "--records-dir " + records + " --ready-file " + dir_ + "/launch.ready"},
              dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  const std::pair<int, std::string> answer =
      testing::SetWhenDeclared(kBin + "strata_ctl --coordinator " + coordinator +
                               " " + TokenFlags() + "--job-id 2 set "
                               "device.sharing=naive --from-iteration 40");
  ASSERT_EQ(answer.first, 0) << answer.second;
  EXPECT_EQ(answer.second, "device.sharing=naive from iteration 40\n");
  ASSERT_EQ(run.Wait(), 0) << run.log();

  const std::vector<nlohmann::json> jobs[2] = {RecordsOf(records, 1), RecordsOf(records, 2)};
  ASSERT_EQ(jobs[0].size(), 120u);
  ASSERT_EQ(jobs[1].size(), 120u);
  // The jobs run at their own pace: job 1 is out of the token's way from
  // when job 2's iteration 40 began.
  const double switched = jobs[1][40]["start"].get<double>();
  double before[2] = {0, 0}, after[2] = {0, 0};  // device waits, per job
  for (int job : {1, 2}) {
    const std::vector<nlohmann::json>& mine = jobs[job - 1];
    for (size_t i = 1; i < mine.size(); ++i) {
      const std::string sharing = mine[i]["knobs"].value("device.sharing", "");
      EXPECT_EQ(sharing, job == 2 && i >= 40 ? "naive" : "crossover")
          << "job " << job << " iteration " << i;
      const bool later = job == 2 ? i >= 40 : mine[i]["start"].get<double>() > switched;
      (later ? after : before)[job - 1] += DeviceWaitSeconds(mine[i]);
    }
  }
  EXPECT_GT(before[0] + before[1], 0.0) << "the jobs did not share before the change";
  EXPECT_LT(after[0], 0.005);
  EXPECT_LT(after[1], 0.005);
}

// Stanza mode through the launcher: two FC workers serve both jobs' heads,
// the MoE job's experts split between them (an expert exchange per job).
TEST_F(MultiJobClusterTest, StanzaJobsWithExpertsComputeWhatTheyComputeAlone) {
  const std::string common =
      " --mode stanza --conv-workers 2 --fc-workers 2 --threads 2 "
      "--max-steps 16 --evaluate=false --progress=false --parameters-out ";
  const auto [a_code, a_log] =
      RunCommand(kBin + "strata_launch --config " + kConfig + common + dir_ + "/a.ckpt");
  ASSERT_EQ(a_code, 0) << a_log;
  const auto [b_code, b_log] = RunCommand(kBin + "strata_launch --config " + testing::kMoeConfig +
                                          common + dir_ + "/b.ckpt");
  ASSERT_EQ(b_code, 0) << b_log;
  const auto [code, log] =
      RunCommand(kBin + "strata_launch --jobs " + kConfig + "," + testing::kMoeConfig + common +
                 dir_ + "/together.ckpt --policy crossover");
  ASSERT_EQ(code, 0) << log;
  EXPECT_NE(log.find("final: job=1 mode=stanza"), std::string::npos) << log;
  EXPECT_NE(log.find("final: job=2 mode=stanza"), std::string::npos) << log;
  EXPECT_LE(MaxDifference(dir_ + "/a.ckpt", dir_ + "/together.job1.ckpt"), 1e-5);
  EXPECT_LE(MaxDifference(dir_ + "/b.ckpt", dir_ + "/together.job2.ckpt"), 1e-5);
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

// Job 2's second worker runs in a process of its own, which is killed
// mid-run: job 2 fails on every process with an error naming the dead
// worker, and job 1, which shares the server and worker 0's process with
// it, trains to its end.
TEST_F(MultiJobClusterTest, AJobThatDiesMidRunLeavesTheOtherTraining) {
  const std::string short_job = dir_ + "/short.json", long_job = dir_ + "/long.json";
  std::ofstream(short_job) << testing::EditedConfig(kConfig, R"("epochs": 3,)",
                                                    R"("epochs": 3, "max_steps": 40,)");
  std::ofstream(long_job) << testing::EditedConfig(kBatchNormConfig, R"("epochs": 3,)",
                                                   R"("epochs": 3, "max_steps": 100000,)");
  Process server({kBin + "strata_server", "--rank", "0", "--coordinator", "tcp://127.0.0.1:0",
                  "--mode", "ps", "--conv-workers", "2", "--dead-timeout", "2", "--ready-file",
                  dir_ + "/server.ready", "--job", short_job, "--job", long_job},
                 dir_ + "/server.log");
  const std::string coordinator = server.WaitForReady(dir_ + "/server.ready");
  ASSERT_FALSE(coordinator.empty()) << server.log();
  auto worker = [&](int rank, std::vector<std::string> jobs, const std::string& name) {
    return Worker(coordinator, rank, jobs, dir_ + "/" + name + ".ckpt", dir_ + "/" + name + ".log");
  };
  auto both = worker(0, {"--job", short_job, "--job", long_job}, "both");
  auto short_1 = worker(1, {"--config", short_job, "--job-id", "1"}, "short_1");
  auto long_1 = worker(1, {"--config", long_job, "--job-id", "2"}, "long_1");
  testing::SleepScaled(absl::Seconds(3));  // job 2 is training (it runs for minutes)
  long_1->Kill9();
  EXPECT_EQ(short_1->Wait(), 0) << short_1->log();
  EXPECT_EQ(both->Wait(), 1) << both->log();
  const std::string log = both->log();
  EXPECT_NE(log.find("job 2: "), std::string::npos) << log;
  EXPECT_NE(log.find("worker 1 stopped sending heartbeats"), std::string::npos) << log;
  EXPECT_EQ(log.find("job 1: "), std::string::npos) << log;
  EXPECT_FALSE(Parameters(dir_ + "/both.job1.ckpt").empty());  // job 1 finished
  EXPECT_EQ(server.Wait(), 1) << server.log();
  EXPECT_NE(server.log().find("finished job 1"), std::string::npos) << server.log();
}

}  // namespace
}  // namespace strata
