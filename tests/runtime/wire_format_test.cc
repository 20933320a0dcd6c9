// The wire.format knob on a running stanza job: pushes, pulls, activations
// and their gradients travel as bf16 from the iteration the coordinator
// agrees, in every process at once, at half the bytes; and a job that
// starts in bf16 (cluster.wire_format) moves half the bytes of one in fp32.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::Process;
using testing::JsonLines;
using testing::RunCommand;
using testing::SetWhenDeclared;

constexpr int kSteps = 60;
constexpr int kFrom = 30;

class WireFormatTest : public testing::ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    WriteTokens("wire-format-test-token");
  }
  // A stanza job whose pushes and pulls take the sockets (no shared
  // memory: lanes carry fp32 whatever the format).
  std::string Launch(const std::string& config, const std::string& extra) const {
    return kBin + "strata_launch --config " + config +
           " --mode stanza --servers 1 --conv-workers 2 --fc-workers 1 --transport tcp "
           "--shared-memory=false --max-steps " +
           std::to_string(kSteps) + " --evaluate=false --progress=false " + TokenFlags() + extra;
  }
  std::vector<nlohmann::json> Records(const std::string& process) const {
    return JsonLines(dir_ + "/records/" + process + ".jsonl");
  }
};

TEST_F(WireFormatTest, TheKnobHalvesEveryProcesssBytesFromTheAgreedIteration) {
  Process run({"/bin/sh", "-c",
               Launch(kConfig, "--records-dir " + dir_ + "/records --parameters-out " + dir_ +
                                   "/changed.ckpt --ready-file " + dir_ + "/launch.ready")},
              dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();
  const std::string ctl = kBin + "strata_ctl --coordinator " + coordinator +
                          " " + TokenFlags();
  const std::string set = "set wire.format=bf16 --from-iteration " + std::to_string(kFrom);
  const std::pair<int, std::string> answer = SetWhenDeclared(ctl + set);
  ASSERT_EQ(answer.first, 0) << answer.second;
  EXPECT_EQ(answer.second, "wire.format=bf16 from iteration 30\n");
  const auto [bad_code, bad_out] = RunCommand(ctl + "set wire.format=fp8");
  EXPECT_EQ(bad_code, 1);
  EXPECT_EQ(bad_out, "strata_ctl: wire.format=fp8: the wire formats are fp32 and bf16\n");
  ASSERT_EQ(run.Wait(), 0) << run.log();

  // Each process's bytes per iteration before and after, steady iterations
  // only (the first sends the initial values; the last few, the ends).
  for (const char* process : {"conv_worker_0", "conv_worker_1", "fc_worker_0"}) {
    const std::vector<nlohmann::json> records = Records(process);
    ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << process;
    double before = 0, after = 0;
    int n_before = 0, n_after = 0;
    for (const nlohmann::json& r : records) {
      const int64_t i = r["iteration"];
      EXPECT_EQ(r["knobs"].value("wire.format", ""), i >= kFrom ? "bf16" : "fp32")
          << process << " iteration " << i;
      double sent = 0;
      for (const auto& [peer, bytes] : r["bytes_sent"].items()) sent += bytes.get<double>();
      if (i >= 5 && i < kFrom) {
        before += sent;
        ++n_before;
      } else if (i >= kFrom + 1 && i < kSteps - 2) {
        after += sent;
        ++n_after;
      }
    }
    const double ratio = (after / n_after) / (before / n_before);
    EXPECT_GT(ratio, 0.45) << process;
    EXPECT_LT(ratio, 0.6) << process;
  }
}

TEST_F(WireFormatTest, AJobThatStartsInBf16MovesHalfTheBytesAndLearnsAlike) {
  const std::string bf16 = dir_ + "/bf16_job.json";
  std::ofstream(bf16) << testing::EditedConfig(
      kConfig, R"("fc_workers": 1})", R"("fc_workers": 1, "wire_format": "bf16"})");
  const auto [fp32_code, fp32_out] = RunCommand(
      Launch(kConfig, "--summary-out " + dir_ + "/fp32.json --parameters-out " + dir_ + "/fp32.ckpt"));
  ASSERT_EQ(fp32_code, 0) << fp32_out;
  const auto [bf16_code, bf16_out] = RunCommand(
      Launch(bf16, "--summary-out " + dir_ + "/bf16.json --parameters-out " + dir_ + "/bf16.ckpt"));
  ASSERT_EQ(bf16_code, 0) << bf16_out;
  const nlohmann::json a = Summary(dir_ + "/fp32.json"), b = Summary(dir_ + "/bf16.json");
  const double ratio = b["bytes_per_iteration"].get<double>() / a["bytes_per_iteration"].get<double>();
  EXPECT_GT(ratio, 0.45);
  EXPECT_LT(ratio, 0.6);
  // Rounding changes the numbers (parameters drift apart as two summation
  // orders' do), not how well the job learns.
  EXPECT_GT(MaxDifference(dir_ + "/fp32.ckpt", dir_ + "/bf16.ckpt"), 0.0f);
  EXPECT_NEAR(b["train_loss"].get<double>(), a["train_loss"].get<double>(), 0.1);
  // A config of another format is a clear error.
  EXPECT_EQ(testing::ConfigError(testing::EditedConfig(kConfig, R"("fc_workers": 1})",
                                                       R"("fc_workers": 1, "wire_format": "fp16"})")),
            "job.json: cluster.wire_format: unknown format \"fp16\" (use fp32 or bf16)");
}

}  // namespace
}  // namespace strata
