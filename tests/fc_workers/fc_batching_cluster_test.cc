// The fc.batching knob on real stanza clusters: an FC worker that trains on
// each conv worker's rows as they arrive (from the start, with uneven
// batch shares, with a head shared by two FC workers, or from an iteration
// agreed while the job runs) computes what one that gathers them computes;
// conv workers that run ahead under ASP are served; where the knob cannot
// apply, the job is refused before it trains.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::JsonLines;
using testing::kBin;
using testing::Process;
using testing::RunCommand;
using testing::SetWhenDeclared;

constexpr int kSteps = 24;
constexpr int kFrom = 12;

class FcBatchingClusterTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    WriteTokens("fc-batching-test-token");
    config_ = PlainSgdConfig();
  }
  // The plain-SGD config starting with `batching` and `shares`.
  std::string Config(const std::string& batching, const std::string& shares) const {
    const std::string path = dir_ + "/" + batching + "_" + shares + ".json";
    std::ofstream(path) << testing::EditedConfig(config_, R"("fc_workers": 1})",
                                                 R"("fc_workers": 1, "fc_batching": ")" + batching +
                                                     R"(", "batch_shares": ")" + shares + R"("})");
    return path;
  }
  std::string Launch(const std::string& config, const std::string& cluster,
                     const std::string& extra) const {
    return kBin + "strata_launch --config " + config + " --mode stanza " + cluster +
           " --batch-size 64 --max-steps " + std::to_string(kSteps) +
           " --evaluate=false --progress=false " + TokenFlags() + extra;
  }
  std::vector<nlohmann::json> FcRecords() const {
    return JsonLines(dir_ + "/records/fc_worker_0.jsonl", "iteration");
  }

  std::string config_;
};

TEST_F(FcBatchingClusterTest, ArrivalBatchingComputesWhatGatheredBatchingDoes) {
  struct Layout {
    std::string name;
    std::string cluster;
    std::string shares;
    int fc_rows;  // rows FC worker 0 trains on per iteration
  };
  const std::vector<Layout> layouts = {
      {"one_fc", "--servers 1 --fc-workers 1 --conv-workers 2", "even", 64},
      {"uneven", "--servers 1 --fc-workers 1 --conv-workers 2", "3:1", 64},
      {"shared_head", "--servers 2 --fc-workers 2 --conv-workers 4", "even", 32},
  };
  for (const Layout& l : layouts) {
    for (const std::string batching : {"gathered", "arrival"}) {
      const auto [code, out] =
          RunCommand(Launch(Config(batching, l.shares), l.cluster,
                            "--parameters-out " + dir_ + "/" + l.name + "_" + batching +
                                ".ckpt --records-dir " + dir_ + "/records"));
      ASSERT_EQ(code, 0) << l.name << " " << batching << "\n" << out;
    }
    EXPECT_LE(MaxDifference(dir_ + "/" + l.name + "_gathered.ckpt",
                            dir_ + "/" + l.name + "_arrival.ckpt"),
              1e-5f)
        << l.name;
    // The arrival run's records.
    const std::vector<nlohmann::json> records = FcRecords();
    ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << l.name;
    for (const nlohmann::json& r : records) {
      EXPECT_EQ(r["knobs"].value("fc.batching", ""), "arrival") << l.name;
      EXPECT_EQ(r.value("rows", 0), l.fc_rows) << l.name;
    }
  }
}

TEST_F(FcBatchingClusterTest, BatchingChangedWhileTheJobRunsTakesEffectAtOneIteration) {
  const std::string cluster = "--servers 1 --fc-workers 1 --conv-workers 2";
  const std::string gathered = Config("gathered", "even");
  const auto [code, out] =
      RunCommand(Launch(gathered, cluster, "--parameters-out " + dir_ + "/gathered.ckpt"));
  ASSERT_EQ(code, 0) << out;
  Process run({"/bin/sh", "-c",
               Launch(gathered, cluster,
                      "--records-dir " + dir_ + "/records --parameters-out " + dir_ +
                          "/changed.ckpt --ready-file " + dir_ + "/launch.ready")},
              dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  const std::string ctl =
      kBin + "strata_ctl --coordinator " + coordinator + " " + TokenFlags();
  const std::pair<int, std::string> answer =
      SetWhenDeclared(ctl + "set fc.batching=arrival --from-iteration " + std::to_string(kFrom));
  ASSERT_EQ(answer.first, 0) << answer.second;
  EXPECT_EQ(answer.second, "fc.batching=arrival from iteration 12\n");
  const auto [bad_code, bad_out] = RunCommand(ctl + "set fc.batching=each");
  EXPECT_EQ(bad_code, 1);
  EXPECT_EQ(bad_out,
            "strata_ctl: fc.batching=each: unknown FC batching \"each\" (use gathered or "
            "arrival)\n");
  ASSERT_EQ(run.Wait(), 0) << run.log();

  EXPECT_LE(MaxDifference(dir_ + "/gathered.ckpt", dir_ + "/changed.ckpt"), 1e-5f);
  const std::vector<nlohmann::json> records = FcRecords();
  ASSERT_EQ(records.size(), static_cast<size_t>(kSteps));
  for (const nlohmann::json& r : records) {
    const int64_t i = r["iteration"];
    EXPECT_EQ(r["knobs"].value("fc.batching", ""), i >= kFrom ? "arrival" : "gathered")
        << "iteration " << i;
  }
}

// Under ASP a conv worker answered first may send its next iteration's
// activations while the FC worker still waits for the other's: they are
// kept for that iteration, not refused.
TEST_F(FcBatchingClusterTest, ConvWorkersRunningAheadUnderAspAreServed) {
  const auto [code, out] =
      RunCommand(Launch(Config("arrival", "3:1"), "--servers 1 --fc-workers 1 --conv-workers 2",
                        "--consistency asp --records-dir " + dir_ + "/records"));
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("finished (0 requests refused)"), std::string::npos) << out;
  EXPECT_EQ(FcRecords().size(), static_cast<size_t>(kSteps));
}

TEST_F(FcBatchingClusterTest, AnMoeHeadOnOneFcWorkerComputesWhatGatheredBatchingDoes) {
  // The MoE layer overwrites its gradients, so the program sums them over
  // the arrivals. Dropless routing and no load-balancing loss make the
  // experts' work per token independent of which rows share a batch.
  const std::string moe = PlainSgdConfig(testing::kMoeConfig);
  for (const std::string batching : {"gathered", "arrival"}) {
    const std::string path = dir_ + "/moe_" + batching + ".json";
    std::ofstream(path) << testing::EditedConfig(
        moe, {{R"("capacity_factor": 1.25)", R"("capacity_factor": 0)"},
              {R"("aux_loss_weight": 0.01)", R"("aux_loss_weight": 0)"},
              {R"("fc_workers": 1})",
               R"("fc_workers": 1, "fc_batching": ")" + batching + R"("})"}});
    const auto [code, out] =
        RunCommand(Launch(path, "--servers 1 --fc-workers 1 --conv-workers 2",
                          "--parameters-out " + dir_ + "/moe_" + batching +
                              ".ckpt --records-dir " + dir_ + "/records"));
    ASSERT_EQ(code, 0) << batching << "\n" << out;
  }
  // Looser than the dense heads' 1e-5: the arrival order follows timing,
  // so float sums run in another order, and a token whose two best experts
  // are all but tied may go to another one (about 1e-4 after 24 steps).
  // Slices whose expert gradients were not summed leave about 1e-2.
  EXPECT_LE(MaxDifference(dir_ + "/moe_gathered.ckpt", dir_ + "/moe_arrival.ckpt"), 1e-3f);
  const std::vector<nlohmann::json> records = FcRecords();
  ASSERT_EQ(records.size(), static_cast<size_t>(kSteps));
  EXPECT_EQ(records.back()["knobs"].value("fc.batching", ""), "arrival");
}

TEST_F(FcBatchingClusterTest, ArrivalBatchingIsRefusedWhereTheExpertsAreSplit) {
  const std::string moe = PlainSgdConfig(testing::kMoeConfig);
  const std::string path = dir_ + "/moe_arrival.json";
  std::ofstream(path) << testing::EditedConfig(moe, R"("fc_workers": 1})",
                                               R"("fc_workers": 1, "fc_batching": "arrival"})");
  const auto [code, out] =
      RunCommand(Launch(path, "--servers 1 --fc-workers 2 --conv-workers 2", ""));
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("cluster.fc_batching arrival: the MoE experts are split over 2 FC workers, "
                     "whose exchanges pair one batch of each; use gathered"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace strata
