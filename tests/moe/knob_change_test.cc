// A running stanza MoE job's pipelining degree changed through strata_ctl:
// every process switches at the iteration the coordinator agreed (as their
// iteration records show), and the result is the unchanged run's, since d
// never changes the math. Refusals name what was wrong and leave the job
// running.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"

namespace strata::moe {
namespace {

using strata::testing::kBin;
using strata::testing::kMoeConfig;
using strata::testing::Process;
using strata::testing::JsonLines;
using strata::testing::RunCommand;
using strata::testing::SetWhenDeclared;

constexpr int kSteps = 60;
constexpr int kFrom = 30;  // the iteration the change is asked for
const char* const kProcesses[] = {"conv_worker_0", "conv_worker_1", "fc_worker_0", "fc_worker_1"};

class KnobChangeTest : public strata::testing::ClusterTest {
 protected:
  std::vector<nlohmann::json> Records(const std::string& process) const {
    return JsonLines(dir_ + "/records/" + process + ".jsonl");
  }
  std::string Launch(const std::string& extra) const {
    return kBin + "strata_launch --config " + kMoeConfig +
           " --mode stanza --conv-workers 2 --fc-workers 2 --transport tcp --max-steps " +
           std::to_string(kSteps) + " --evaluate=false --progress=false " + TokenFlags() + extra;
  }
  void SetUp() override {
    ClusterTest::SetUp();
    WriteTokens("knob-change-test-token");
  }
  std::string CtlCommand(const std::string& coordinator) const {
    return kBin + "strata_ctl --coordinator " + coordinator + " " + TokenFlags();
  }
  std::pair<int, std::string> Ctl(const std::string& coordinator, const std::string& args) const {
    return RunCommand(CtlCommand(coordinator) + args);
  }
};

TEST_F(KnobChangeTest, PipelineChunksChangeAtOneIterationEverywhereAndLeaveTheMathAlone) {
  const auto [ref_code, ref_out] = RunCommand(Launch("--parameters-out " + dir_ + "/ref.ckpt"));
  ASSERT_EQ(ref_code, 0) << ref_out;

  std::vector<std::string> argv = {
      "/bin/sh", "-c",
      Launch("--records-dir " + dir_ + "/records --parameters-out " + dir_ +
             "/changed.ckpt --ready-file " + dir_ + "/launch.ready")};
  Process run(argv, dir_ + "/run.log");
  const std::string coordinator = run.WaitForReady(dir_ + "/launch.ready");
  ASSERT_FALSE(coordinator.empty()) << run.log();

  // Asked for iteration 30 as soon as the FC workers, which apply the
  // knob, have declared it with their first lease.
  const std::string set = "set moe.pipeline_chunks=4 --from-iteration " + std::to_string(kFrom);
  const std::pair<int, std::string> answer = SetWhenDeclared(CtlCommand(coordinator) + set);
  ASSERT_EQ(answer.first, 0) << answer.second;
  EXPECT_EQ(answer.second, "moe.pipeline_chunks=4 from iteration 30\n");

  // Refusals name what is wrong; the job goes on.
  const auto [bad_code, bad_out] = Ctl(coordinator, "set moe.pipeline_chunks=0");
  EXPECT_EQ(bad_code, 1);
  EXPECT_EQ(bad_out,
            "strata_ctl: moe.pipeline_chunks=0: the pipelining degree must be an integer in "
            "[1, 64], got \"0\"\n");
  // A holder of the job token alone may look at the knobs, not change them.
  const std::string job_token_only =
      kBin + "strata_ctl --coordinator " + coordinator + " --job-token-file " + dir_ + "/token ";
  const auto [look_code, look_out] = RunCommand(job_token_only + "get");
  EXPECT_EQ(look_code, 0) << look_out;
  EXPECT_NE(look_out.find("moe.pipeline_chunks="), std::string::npos) << look_out;
  const auto [set_code, set_out] = RunCommand(job_token_only + "set moe.pipeline_chunks=2");
  EXPECT_EQ(set_code, 1);
  EXPECT_EQ(set_out,
            "strata_ctl: knob-set from the tool without the admin token; the coordinator takes "
            "it only from a tool that presents the admin token its servers were given "
            "(--admin-token-file or $STRATA_ADMIN_TOKEN)\n");
  const auto [unknown_code, unknown_out] = Ctl(coordinator, "set moe.chunks=4");
  EXPECT_EQ(unknown_code, 1);
  EXPECT_EQ(unknown_out,
            "strata_ctl: unknown knob \"moe.chunks\" (known: batch.shares, device.sharing, "
            "fc.batching, moe.parallelism, moe.pipeline_chunks, wire.format)\n");
  const auto [early_code, early_out] =
      Ctl(coordinator, "set moe.pipeline_chunks=2 --from-iteration 3");
  EXPECT_EQ(early_code, 1);
  EXPECT_NE(early_out.find("iteration 3 is too early: a process of the job may have started it"),
            std::string::npos)
      << early_out;
  const int64_t from = kFrom;
  const auto [get_code, get_out] = Ctl(coordinator, "get");
  EXPECT_EQ(get_code, 0) << get_out;
  EXPECT_NE(get_out.find("moe.pipeline_chunks=4 (from iteration " + std::to_string(from) + ")"),
            std::string::npos)
      << get_out;
  EXPECT_NE(get_out.find("moe.parallelism=expert (since the start)"), std::string::npos) << get_out;
  ASSERT_EQ(run.Wait(), 0) << run.log();

  // Every process ran every iteration with d = 1 before `from` and d = 4
  // from it on (a conv worker learns the knob with its first lease after
  // the FC workers declared it).
  for (const char* p : kProcesses) {
    const auto records = Records(p);
    ASSERT_EQ(records.size(), static_cast<size_t>(kSteps)) << p;
    for (const auto& r : records) {
      const int64_t i = r["iteration"];
      const auto& knobs = r["knobs"];
      if (i >= from) {
        EXPECT_EQ(knobs.value("moe.pipeline_chunks", ""), "4") << p << " iteration " << i;
      } else if (knobs.contains("moe.pipeline_chunks")) {
        EXPECT_EQ(knobs["moe.pipeline_chunks"], "1") << p << " iteration " << i;
      } else {
        EXPECT_EQ(std::string(p).rfind("conv_worker", 0), 0u) << p << " iteration " << i;
      }
    }
  }
  EXPECT_LE(MaxDifference(dir_ + "/ref.ckpt", dir_ + "/changed.ckpt"), 1e-5);
}

}  // namespace
}  // namespace strata::moe
