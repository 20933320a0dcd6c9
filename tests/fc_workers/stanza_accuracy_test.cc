// Whole epochs of stanza mode with real processes on loopback: the default
// job reaches 90% with one FC worker and with two (ctest label "accuracy").
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::RunCommand;

class StanzaAccuracyTest : public testing::ClusterTest {};

TEST_F(StanzaAccuracyTest, TwoConvWorkersOneFcWorkerReach90PercentInThreeEpochs) {
  auto [code, out] = RunCommand(kBin + "strata_launch --config " + kConfig +
                                " --mode stanza --servers 1 --conv-workers 2 --fc-workers 1 "
                                "--epochs 3 --summary-out " +
                                dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  nlohmann::json s = Summary(dir_ + "/s.json");
  EXPECT_EQ(s["mode"], "stanza");
  EXPECT_EQ(s["steps"], 3 * 937);
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.90) << out;
  EXPECT_NE(out.find("final: mode=stanza test_accuracy=0.9"), std::string::npos) << out;
}

TEST_F(StanzaAccuracyTest, TwoFcWorkersReach90PercentInThreeEpochs) {
  auto [code, out] = RunCommand(kBin + "strata_launch --config " + kConfig +
                                " --mode stanza --servers 1 --conv-workers 2 --fc-workers 2 "
                                "--epochs 3 --summary-out " +
                                dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_GE(Summary(dir_ + "/s.json")["test_accuracy"].get<double>(), 0.90) << out;
}

// FC worker 0 evaluates the trunk with the running statistics the conv
// workers trained (their mean, through the servers), so a BatchNorm trunk
// scores in stanza mode what it scores in one process and in ps mode.
TEST_F(StanzaAccuracyTest, BatchNormTrunkEvaluatesLikeSingleAndPsAfterOneEpoch) {
  std::map<std::string, double> accuracy;
  for (const auto& [name, flags] : std::vector<std::pair<std::string, std::string>>{
           {"single", "--mode single"},
           {"ps", "--mode ps --servers 1 --conv-workers 2"},
           {"stanza", "--mode stanza --servers 1 --conv-workers 2 --fc-workers 1"}}) {
    auto [code, out] =
        RunCommand(kBin + "strata_launch --config " + testing::kBatchNormConfig + " " + flags +
                   " --epochs 1 --progress=false --summary-out " + dir_ + "/" + name + ".json");
    ASSERT_EQ(code, 0) << out;
    accuracy[name] = Summary(dir_ + "/" + name + ".json")["test_accuracy"].get<double>();
  }
  EXPECT_GE(accuracy["single"], 0.88);
  EXPECT_NEAR(accuracy["ps"], accuracy["single"], 0.01);
  EXPECT_NEAR(accuracy["stanza"], accuracy["single"], 0.01);
}

}  // namespace
}  // namespace strata
