// Whole epochs of stanza mode with real processes on loopback: the default
// job reaches 90% with one FC worker and with two (ctest label "accuracy").
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace strata
