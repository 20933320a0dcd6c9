// The batch.shares knob on real clusters: conv workers that take uneven
// shares of every global batch (from the start, or from an iteration the
// coordinator agrees while the job runs) compute what even shares compute,
// in ps and in stanza mode (with one FC worker, and with two that then
// gather uneven batches and reduce the head through the servers), and each
// records the rows it took.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::Process;
using testing::JsonLines;
using testing::RunCommand;
using testing::SetWhenDeclared;

constexpr int kSteps = 24;
constexpr int kFrom = 12;

class BatchSharesClusterTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    WriteTokens("batch-shares-test-token");
    config_ = PlainSgdConfig();
  }
  // `config` with cluster.batch_shares set to `shares`.
  std::string WithShares(const std::string& shares) const {
    const std::string path = dir_ + "/shares_" + shares + ".json";
    std::ofstream(path) << testing::EditedConfig(
        config_, R"("fc_workers": 1})",
        R"("fc_workers": 1, "batch_shares": ")" + shares + R"("})");
    return path;
  }
  // `layout`: ps, stanza (one FC worker) or stanza2 (two FC workers
  // reducing the head through two servers).
  std::string Launch(const std::string& config, const std::string& layout,
                     const std::string& extra) const {
    const std::string cluster = layout == "ps"       ? "--mode ps --servers 1"
                                : layout == "stanza" ? "--mode stanza --servers 1 --fc-workers 1"
                                                     : "--mode stanza --servers 2 --fc-workers 2";
    return kBin + "strata_launch --config " + config + " " + cluster +
           " --conv-workers 2 --batch-size 64 --max-steps " + std::to_string(kSteps) +
           " --evaluate=false --progress=false " + TokenFlags() + extra;
  }
  std::vector<nlohmann::json> Records(const std::string& process) const {
    return JsonLines(dir_ + "/records/" + process + ".jsonl", "iteration");
  }

  std::string config_;
};

TEST_F(BatchSharesClusterTest, UnevenSharesFromTheStartComputeWhatEvenSharesDo) {
  for (const std::string mode : {"ps", "stanza", "stanza2"}) {
    for (const std::string shares : {"even", "3:1"}) {
      const auto [code, out] = RunCommand(Launch(
          WithShares(shares), mode,
          "--parameters-out " + dir_ + "/" + mode + "_" + shares + ".ckpt --records-dir " + dir_ +
              "/records"));
      ASSERT_EQ(code, 0) << mode << " " << shares << "\n" << out;
    }
    EXPECT_LE(MaxDifference(dir_ + "/" + mode + "_even.ckpt", dir_ + "/" + mode + "_3:1.ckpt"),
              1e-5f)
        << mode;
    // The last run's records: conv worker 0 took 48 rows, conv worker 1 16.
    for (const auto& [process, rows] : std::vector<std::pair<std::string, int>>{
             {"conv_worker_0", 48}, {"conv_worker_1", 16}}) {
      const std::vector<nlohmann::json> records = Records(process);
      ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << mode << " " << process;
      for (const nlohmann::json& r : records) {
        EXPECT_EQ(r.value("rows", 0), rows) << mode << " " << process;
        EXPECT_EQ(r["knobs"].value("batch.shares", ""), "3:1") << mode << " " << process;
      }
    }
  }
}

TEST_F(BatchSharesClusterTest, SharesChangedWhileTheJobRunsTakeEffectEverywhereAtOneIteration) {
  const std::string even = WithShares("even");
  const auto [code, out] =
      RunCommand(Launch(even, "ps", "--parameters-out " + dir_ + "/even.ckpt"));
  ASSERT_EQ(code, 0) << out;
  Process run({"/bin/sh", "-c",
               Launch(even, "ps",
                      "--records-dir " + dir_ + "/records --parameters-out " + dir_ +
                          "/changed.ckpt --ready-file " + dir_ + "/launch.ready")},
              dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  const std::string ctl = kBin + "strata_ctl --coordinator " + coordinator +
                          " " + TokenFlags();
  const std::string set = "set batch.shares=1:3 --from-iteration " + std::to_string(kFrom);
  const std::pair<int, std::string> answer = SetWhenDeclared(ctl + set);
  ASSERT_EQ(answer.first, 0) << answer.second;
  EXPECT_EQ(answer.second, "batch.shares=1:3 from iteration 12\n");
  const auto [bad_code, bad_out] = RunCommand(ctl + "set batch.shares=1:1:2");
  EXPECT_EQ(bad_code, 1);
  EXPECT_EQ(bad_out,
            "strata_ctl: batch.shares=1:1:2: the job has 2 conv workers; give one weight each\n");
  ASSERT_EQ(run.Wait(), 0) << run.log();

  EXPECT_LE(MaxDifference(dir_ + "/even.ckpt", dir_ + "/changed.ckpt"), 1e-5f);
  for (const auto& [process, after] :
       std::vector<std::pair<std::string, int>>{{"conv_worker_0", 16}, {"conv_worker_1", 48}}) {
    const std::vector<nlohmann::json> records = Records(process);
    ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << process;
    for (const nlohmann::json& r : records) {
      const int64_t i = r["iteration"];
      EXPECT_EQ(r.value("rows", 0), i >= kFrom ? after : 32) << process << " iteration " << i;
      EXPECT_EQ(r["knobs"].value("batch.shares", ""), i >= kFrom ? "1:3" : "1:1")
          << process << " iteration " << i;
    }
  }
}

}  // namespace
}  // namespace strata
