// Whole epochs of the parameter server with real processes on loopback: the
// default job learns as well over 1 or 2 servers as in one process
// (ctest label "accuracy": minutes, not seconds).
#include <gtest/gtest.h>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::RunCommand;

class PsAccuracyTest : public testing::ClusterTest {};

TEST_F(PsAccuracyTest, OneServerTwoWorkersReach88PercentInOneEpoch) {
  auto [code, out] = RunCommand(
      kBin + "strata_launch --config " + kConfig +
      " --mode ps --servers 1 --conv-workers 2 --epochs 1 --summary-out " + dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  nlohmann::json s = Summary(dir_ + "/s.json");
  EXPECT_EQ(s["mode"], "ps");
  EXPECT_EQ(s["steps"], 937);
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.88) << out;
}

TEST_F(PsAccuracyTest, TwoServersTwoWorkersReach88PercentInOneEpoch) {
  auto [code, out] = RunCommand(
      kBin + "strata_launch --config " + kConfig +
      " --mode ps --servers 2 --conv-workers 2 --epochs 1 --summary-out " + dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_GE(Summary(dir_ + "/s.json")["test_accuracy"].get<double>(), 0.88) << out;
}

}  // namespace
}  // namespace strata
