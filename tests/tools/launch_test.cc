// strata_launch as a user runs it: a real process, its output and files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"

namespace {

using Result = strata::testing::LaunchResult;
using strata::testing::RunLaunch;

const std::string kConfig = std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json";

TEST(LaunchTest, SingleModeWritesSummaryMetricsAndFinalLine) {
  const std::string dir = std::filesystem::temp_directory_path() / "strata_launch_test";
  std::filesystem::create_directories(dir);
  const Result r = RunLaunch("--config " + kConfig +
                             " --mode single --max-steps 40 --threads 2 --seed 3 --metrics-out " +
                             dir + "/m.jsonl --summary-out " + dir + "/s.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("final: mode=single test_accuracy=0."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 1/1  step 40/937"), std::string::npos) << r.output;

  std::ifstream in(dir + "/s.json");
  nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["mode"], "single");
  EXPECT_EQ(summary["steps"], 40);
  EXPECT_EQ(summary["epochs"], 1);
  EXPECT_EQ(summary["threads"], 2);
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.5);  // 40 steps already learn a lot
  EXPECT_GT(summary["images_per_sec"].get<double>(), 0.0);
  EXPECT_TRUE(summary.contains("train_loss"));

  std::ifstream metrics(dir + "/m.jsonl");
  std::string line;
  int train_lines = 0, eval_lines = 0;
  while (std::getline(metrics, line)) {
    nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "train") ++train_lines;
    if (record["event"] == "eval") ++eval_lines;
  }
  EXPECT_EQ(train_lines, 1);  // log_every is 100: one line at the last step
  EXPECT_EQ(eval_lines, 1);
  std::filesystem::remove_all(dir);
}

TEST(LaunchTest, ConfigErrorsExitWithTheFieldPath) {
  const std::string path = std::filesystem::temp_directory_path() / "strata_bad_config.json";
  std::ifstream in(kConfig);
  std::stringstream text;
  text << in.rdbuf();
  std::string bad = text.str();
  const std::string from = R"("maxpool2d", "name": "pool1")";
  bad.replace(bad.find(from), from.size(), R"("maxpool3d", "name": "pool1")");
  std::ofstream(path) << bad;
  const Result r = RunLaunch("--config " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("strata_launch: error: " + path +
                          ": model.layers[2].type: unknown layer type \"maxpool3d\""),
            std::string::npos)
      << r.output;
  std::filesystem::remove(path);
}

const std::string kBatchNormConfig =
    std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist_bn.json";

TEST(LaunchTest, SeveralJobsShareOneClusterAndEachEndsWithItsOwnFinalLine) {
  const std::string dir = ::testing::TempDir() + "/launch_jobs";
  std::filesystem::create_directories(dir);
  Result r = RunLaunch("--jobs " + kConfig + "," + kBatchNormConfig +
                       " --mode ps --conv-workers 2 --max-steps 8 --evaluate=false "
                       "--progress=false --policy crossover --weights 1,3 --summary-out " +
                       dir + "/summary.json --trace-out " + dir + "/trace.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Both workers share their device by the policy and weights given.
  const std::string sharing = "2 jobs share this process's device: crossover, weights 1:3";
  const size_t first = r.output.find(sharing);
  ASSERT_NE(first, std::string::npos) << r.output;
  EXPECT_NE(r.output.find(sharing, first + 1), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("final: job=1 mode=ps "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("final: job=2 mode=ps "), std::string::npos) << r.output;
  // One summary per job, tagged with its id, each of its own config.
  for (int job : {1, 2}) {
    std::ifstream in(dir + "/summary.job" + std::to_string(job) + ".json");
    nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
    ASSERT_TRUE(summary.is_object()) << job;
    EXPECT_EQ(summary["steps"], 8);
    EXPECT_NE(summary["config"].get<std::string>().find(job == 1 ? "fashion_mnist.json"
                                                                 : "fashion_mnist_bn.json"),
              std::string::npos)
        << summary;
  }
  // A child's log lines pass through as they are, not wrapped in another.
  EXPECT_EQ(r.output.find("[launcher] 20"), std::string::npos) << r.output;
  // The trace: a process per conv worker, a thread per job, and every
  // iteration's compute and waits as complete events.
  std::ifstream in(dir + "/trace.json");
  const nlohmann::json trace = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(trace.is_object());
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::set<int64_t>> iterations;  // by (pid, tid)
  std::map<std::pair<int, int>, std::set<std::string>> kinds;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      process_names[e["pid"]] = e["args"]["name"];
    } else if (e["ph"] == "X") {
      EXPECT_GT(e["dur"].get<int64_t>(), 0);
      const std::pair<int, int> thread{e["pid"], e["tid"]};
      iterations[thread].insert(e["args"]["iteration"].get<int64_t>());
      kinds[thread].insert(e["cat"]);
    }
  }
  std::set<std::string> names;
  for (const auto& [pid, name] : process_names) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"conv worker 0", "conv worker 1"}));
  ASSERT_EQ(iterations.size(), 4u);  // 2 processes x 2 jobs
  for (const auto& [thread, seen] : iterations) {
    EXPECT_EQ(seen.size(), 8u) << thread.first << "/" << thread.second;
    EXPECT_TRUE(kinds[thread].count("compute")) << thread.first;
    EXPECT_TRUE(kinds[thread].count("peer wait")) << thread.first;
  }
}

TEST(LaunchTest, SeveralJobsAreRefusedWhereTheyCannotShare) {
  Result r = RunLaunch("--jobs " + kConfig + "," + kConfig + " --config " + kConfig);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("give --config (one job) or --jobs (several), not both"),
            std::string::npos)
      << r.output;
  r = RunLaunch("--jobs " + kConfig + "," + kConfig + " --mode single");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--jobs needs --mode ps or stanza: jobs share a cluster"),
            std::string::npos)
      << r.output;
  r = RunLaunch("--jobs " + kConfig + "," + kConfig + " --mode ps --policy fifo");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("unknown sharing policy 'fifo' (exclusive, naive or crossover)"),
            std::string::npos)
      << r.output;
  // Weights are checked before any process starts.
  r = RunLaunch("--jobs " + kConfig + "," + kConfig + " --mode ps --weights 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("strata_launch: error: --weights has 1 values for 2 jobs"),
            std::string::npos)
      << r.output;
  r = RunLaunch("--jobs " + kConfig + "," + kConfig + " --mode ps --weights 1,-2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--weights: '-2' is not a positive number"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("[server 0]"), std::string::npos) << r.output;
}

TEST(LaunchTest, ALoopbackClusterServesOnThePortRangeOverTcp) {
  Result r = RunLaunch("--config " + kConfig +
                       " --mode ps --servers 2 --conv-workers 2 --max-steps 5 --evaluate=false "
                       "--progress=false --transport tcp --port-range 7200-7209");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Server 0 binds the first port of the range, server 1 the next free one.
  EXPECT_NE(r.output.find("on tcp://127.0.0.1:7200 (job 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("on tcp://127.0.0.1:7201 (job 1"), std::string::npos) << r.output;
  r = RunLaunch("--config " + kConfig + " --mode ps --port-range 7200-7209");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--port-range needs tcp: add --transport tcp"), std::string::npos)
      << r.output;
}

TEST(LaunchTest, MissingConfigAndBadDataPath) {
  Result r = RunLaunch("");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--config is required"), std::string::npos) << r.output;
  r = RunLaunch("--config /nonexistent.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot open job config /nonexistent.json"), std::string::npos);
}

}  // namespace
