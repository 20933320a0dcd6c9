// SeCBAD on a launched job: a policy trained in the runtime environment of
// a batch.shares cost model, run by conv worker 0 with --controller secbad,
// moves rows off a conv worker once its CPU is limited; and everything a
// controller reads (cost model, policy file, schedules) is checked before
// anything starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/knob_policy.h"
#include "scheduler/secbad/runtime_environment.h"
#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"
#include "tools/netem/cpu_schedule.h"

namespace strata {
namespace {

using testing::JsonLines;
using testing::kBin;
using testing::kConfig;
using testing::RunCommand;

// batch.shares over two conv workers of the default job, with a conv
// worker's hiccup in about 1% of iterations (strata_bench train --knob
// batch.shares=... writes such a model from measured runs). Its speed is
// about one machine's; the policy test measures this machine's first.
constexpr char kCostModel[] = R"({"knob": "batch.shares", "mode": "ps",
  "context": "worker-speed", "global_batch": 64, "conv_workers": 2,
  "seconds_per_row": 0.0005, "noise": 0.11, "trace": {"outliers": 0.01},
  "values": {"1:1": {"overhead_seconds": 0.004}, "3:1": {"overhead_seconds": 0.006},
             "1:3": {"overhead_seconds": 0.006}}})";

class SecbadLaunchTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    cost_model_ = dir_ + "/shares.json";
    std::ofstream(cost_model_) << kCostModel;
  }
  // The cost model at this machine's speed now, as the fitter reads it (the
  // lower quartile of a conv worker's compute seconds per row, over a short
  // run's settled iterations), written to cost_model_. Machines differ
  // several-fold, and a policy trained for another speed reads every
  // iteration as off the usual one, limited or not.
  void MeasureThisMachine() {
    const std::string records = dir_ + "/speed";
    const auto [code, out] =
        RunCommand(Launch("--max-steps 60 --controller none --records-dir " + records));
    ASSERT_EQ(code, 0) << out;
    std::vector<double> per_row;
    for (const char* file : {"/conv_worker_0.jsonl", "/conv_worker_1.jsonl"}) {
      for (const nlohmann::json& r : JsonLines(records + file)) {
        if (r["iteration"].get<int64_t>() < 10) continue;  // warming up
        per_row.push_back(r["compute"].get<double>() / r["rows"].get<double>());
      }
    }
    ASSERT_GT(per_row.size(), 50u);
    std::sort(per_row.begin(), per_row.end());
    cost_model_json_["seconds_per_row"] = per_row[per_row.size() / 4];
    std::ofstream(cost_model_) << cost_model_json_.dump();
  }
  // SeCBAD's policy for the cost model, trained briefly.
  std::string TrainPolicy() {
    auto context = *secbad::KnobContextFromJson(cost_model_json_, cost_model_);
    secbad::RuntimeExperimentOptions o;
    o.env.episode_iterations = 600;
    o.env.segment_mean = 150;
    o.env.segment_stddev = 50;
    o.env.lag = 4;
    o.policy.window = 300;
    o.training_steps = 300'000;
    o.evaluation_episodes = 4;
    o.policy_out = dir_ + "/secbad.bin";
    secbad::RuntimeExperiment experiment(context, o);
    SetCpuThreads(1);  // small networks: a second thread only waits at every layer
    absl::StatusOr<secbad::RuntimeRun> run = experiment.Run("secbad", 1);
    EXPECT_TRUE(run.ok()) << run.status();
    EXPECT_GT(run->efficiency, 0.9);
    return o.policy_out;
  }
  std::string Launch(const std::string& extra) const {
    return kBin + "strata_launch --config " + kConfig + " " + kCluster + extra;
  }
  // The default job and its BatchNorm twin, on the same processes.
  std::string LaunchTwoJobs(const std::string& extra) const {
    return kBin + "strata_launch --jobs " + kConfig + "," + testing::kBatchNormConfig + " " +
           kCluster + extra;
  }

  static constexpr char kCluster[] =
      "--mode ps --servers 1 --conv-workers 2 --threads 1 --evaluate=false --progress=false ";

  std::string cost_model_;
  nlohmann::json cost_model_json_ = nlohmann::json::parse(kCostModel);
};

TEST_F(SecbadLaunchTest, ThePolicyMovesRowsOffAConvWorkerWhoseCpuIsLimited) {
  if (!testing::WhyNoCpuLimits().empty()) {
    STRATA_SKIP_WITHOUT("cpu-limits") << "no CPU limits here: " << testing::WhyNoCpuLimits();
  }
  if (testing::TimeScale() > 1) {
    GTEST_SKIP() << "the cost model describes an uninstrumented build's iterations";
  }
  MeasureThisMachine();
  const std::string policy = TrainPolicy();
  const auto [code, out] = RunCommand(
      Launch("--cpu-pin conv0=0,conv1=1 --cpu-schedule conv1=25%@4s --max-steps 400 --controller "
             "secbad --cost-model " +
             cost_model_ + " --policy-file " + policy + " --knob-lead 2 --records-dir " + dir_ +
             "/records --summary-out " + dir_ + "/summary.json"));
  ASSERT_EQ(code, 0) << out;
  // When the limit came, on the records' clock.
  double limited_at = 0;
  for (const nlohmann::json& j : JsonLines(dir_ + "/records/launcher.jsonl")) {
    if (j["what"] == "conv1 limited to 0.25 cores") {
      EXPECT_EQ(j["due"].get<double>(), 4.0);  // the schedule's time for it
      limited_at = j["start"].get<double>();
    }
  }
  ASSERT_GT(limited_at, 0) << out;
  std::vector<std::string> shares;
  int64_t first_limited = -1;
  std::vector<nlohmann::json> events;
  for (const nlohmann::json& r : JsonLines(dir_ + "/records/conv_worker_0.jsonl")) {
    if (r["event"] == "controller") {
      events.push_back(r);
      continue;
    }
    shares.push_back(r["knobs"]["batch.shares"].get<std::string>());
    if (first_limited < 0 && r["start"].get<double>() >= limited_at) first_limited = r["iteration"];
  }
  ASSERT_EQ(shares.size(), 400u);
  ASSERT_GT(first_limited, 20) << "the limit came too early to see the job settle";
  ASSERT_LT(first_limited, 380) << "the job ended before the limit had a chance";
  // Even shares while both conv workers run alike; 3:1 soon after conv
  // worker 1 slowed down, to the end. The processes share this machine's
  // cores with each other and with whatever else runs, and a conv worker
  // that really is slower for a stretch gets fewer rows for it (once for 19
  // iterations in a pristine root): at most a fifth of the iterations
  // before the limit off even shares (a controller that moves on each
  // reading's noise is off in most of them).
  std::vector<int64_t> uneven;
  for (int64_t i = 2; i < first_limited; ++i) {
    if (shares[i] != "1:1") uneven.push_back(i);
  }
  EXPECT_LE(static_cast<int64_t>(uneven.size()), (first_limited - 2) / 5)
      << "iterations " << absl::StrJoin(uneven, ", ");
  const int64_t moved =
      std::find(shares.begin() + first_limited, shares.end(), "3:1") - shares.begin();
  // Conv worker 1's records are relayed an iteration late, the policy
  // waits for the readings to agree (more of them when other processes
  // load the cores: 9 once in make test), and a proposal takes force 2-3
  // iterations later.
  EXPECT_LE(moved - first_limited, 10) << "limited from " << first_limited;
  for (size_t i = moved + 1; i < shares.size(); ++i) EXPECT_EQ(shares[i], "3:1") << i;
  bool proposed = false;
  for (const nlohmann::json& e : events) {
    proposed = proposed || (e["kind"] == "proposal" &&
                            e["detail"].get<std::string>().find("batch.shares=3:1") == 0);
  }
  EXPECT_TRUE(proposed);
  // The same events, in the summary.
  const nlohmann::json summary = Summary(dir_ + "/summary.json");
  ASSERT_TRUE(summary.contains("controller_events")) << summary.dump();
  EXPECT_EQ(summary["controller_events"].size(), events.size());
  EXPECT_EQ(summary["controller_events"][0]["process"], "conv worker 0");
}

TEST_F(SecbadLaunchTest, EachOfSeveralJobsOnTheSameWorkersHasAControllerOfItsOwn) {
  if (!testing::WhyNoCpuLimits().empty()) {
    STRATA_SKIP_WITHOUT("cpu-limits") << "no CPU limits here: " << testing::WhyNoCpuLimits();
  }
  if (testing::TimeScale() > 1) {
    GTEST_SKIP() << "the cost model describes an uninstrumented build's iterations";
  }
  // Both jobs on the same two conv workers; conv worker 1 is limited from
  // 4 s on, which slows both jobs' shares of it.
  const auto [code, out] = RunCommand(LaunchTwoJobs(
      "--cpu-pin conv0=0,conv1=1 --cpu-schedule conv1=25%@4s --max-steps 300 --controller "
      "changepoint --cost-model " +
      cost_model_ + "," + cost_model_ + " --knob-lead 2 --records-dir " + dir_ +
      "/records --summary-out " + dir_ + "/summary.json"));
  ASSERT_EQ(code, 0) << out;
  for (int job : {1, 2}) {
    const std::string tag = ".job" + std::to_string(job);
    std::vector<std::string> shares;
    int own_events = 0;
    for (const nlohmann::json& r : JsonLines(dir_ + "/records/conv_worker_0" + tag + ".jsonl")) {
      if (r["event"] == "controller") {
        ++own_events;
      } else {
        shares.push_back(r["knobs"]["batch.shares"].get<std::string>());
      }
    }
    ASSERT_EQ(shares.size(), 300u) << "job " << job;
    EXPECT_EQ(shares[2], "1:1") << "job " << job;
    EXPECT_EQ(shares.back(), "3:1") << "job " << job << "\n" << out;
    // The job's summary holds its own controller's events, among them the
    // proposal that moved its rows.
    const nlohmann::json summary = Summary(dir_ + "/summary" + tag + ".json");
    ASSERT_TRUE(summary.contains("controller_events")) << summary.dump();
    EXPECT_EQ(summary["controller_events"].size(), static_cast<size_t>(own_events));
    bool proposed = false;
    for (const nlohmann::json& e : summary["controller_events"]) {
      proposed = proposed || (e["kind"] == "proposal" &&
                              e["detail"].get<std::string>().find("batch.shares=3:1") == 0);
    }
    EXPECT_TRUE(proposed) << "job " << job << ": " << summary["controller_events"].dump();
  }
}

TEST_F(SecbadLaunchTest, ABadPolicyCostModelOrScheduleIsRefusedBeforeAnythingStarts) {
  const std::string policy = dir_ + "/fresh.bin";
  {
    auto context = *secbad::KnobContextFromJson(nlohmann::json::parse(kCostModel), cost_model_);
    ASSERT_TRUE((*secbad::KnobPolicy::Create(context, {}, 1))->Save(policy).ok());
  }
  const std::string secbad = "--controller secbad --cost-model " + cost_model_;
  nlohmann::json two = nlohmann::json::parse(kCostModel);
  two["values"].erase("1:3");
  std::ofstream(dir_ + "/two.json") << two.dump();
  nlohmann::json unknown = nlohmann::json::parse(kCostModel);
  unknown["values"]["2:x"] = {{"overhead_seconds", 0.004}};
  std::ofstream(dir_ + "/unknown.json") << unknown.dump();
  std::ofstream(dir_ + "/corrupt.bin") << "not a checkpoint";
  for (const auto& [flags, why] : std::vector<std::pair<std::string, std::string>>{
           {secbad, "--controller secbad needs --policy-file FILE"},
           {secbad + " --policy-file " + dir_ + "/corrupt.bin",
            "--policy-file " + dir_ + "/corrupt.bin"},
           {secbad + " --policy-file " + dir_ + "/missing.bin", dir_ + "/missing.bin"},
           {"--controller secbad --cost-model " + dir_ + "/two.json --policy-file " + policy,
            "trained for values [\"1:1\",\"1:3\",\"3:1\"]; this job's is [\"1:1\",\"3:1\"]"},
           {"--controller changepoint --cost-model " + dir_ + "/unknown.json",
            "values.2:x: batch shares \"2:x\""},
           {"--controller changepoint --cost-model " + cost_model_ + " --conv-workers 4",
            "fitted to a job of 2 conv workers; this one has 4"},
           {"--controller changepoint --cost-model " + cost_model_ + " --batch-size 128",
            "fitted to a global batch of 64; this job's is 128"},
           {"--controller changepoint --policy-file " + policy,
            "--policy-file is for --controller secbad"},
           {"--cpu-schedule conv1=quarter@0", "limit \"quarter\" is not none or a percentage"},
           {"--cpu-pin conv0=9999", "CPU 9999 does not exist"}}) {
    const auto [code, out] = RunCommand(Launch(flags));
    EXPECT_NE(code, 0) << flags;
    EXPECT_NE(out.find(why), std::string::npos) << flags << "\n" << out;
    EXPECT_EQ(out.find("[server 0]"), std::string::npos) << flags << "\n" << out;
  }
  // Several jobs: a file for each, or one for all; each job's checked.
  for (const auto& [flags, why] : std::vector<std::pair<std::string, std::string>>{
           {"--controller changepoint --cost-model " + cost_model_ + "," + cost_model_ + "," +
                cost_model_,
            "--cost-model names 3 files for 2 jobs: give one for every job, or one per job"},
           {"--controller changepoint --cost-model " + cost_model_ + " --batch-size 128",
            "job 1: " + cost_model_ + ": fitted to a global batch of 64; this job's is 128"},
           {"--controller secbad --cost-model " + cost_model_ + "," + dir_ +
                "/two.json --policy-file " + policy,
            "job 2: --policy-file " + policy + ": trained for values"}}) {
    const auto [code, out] = RunCommand(LaunchTwoJobs(flags));
    EXPECT_NE(code, 0) << flags;
    EXPECT_NE(out.find(why), std::string::npos) << flags << "\n" << out;
    EXPECT_EQ(out.find("[server 0]"), std::string::npos) << flags << "\n" << out;
  }
}

}  // namespace
}  // namespace strata
