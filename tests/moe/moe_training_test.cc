// The MoE head of configs/fashion_mnist_moe.json trains for real in stanza
// mode: with one FC worker the experts stay inside it and only activations
// cross the network; with two, each holds half of the experts (expert
// parallelism) and routed tokens travel between them.
#include <gtest/gtest.h>

#include "tests/support/cluster_fixture.h"

namespace strata::moe {
namespace {

using strata::testing::kBin;
using strata::testing::kMoeConfig;
using strata::testing::RunCommand;

class MoeTrainingTest : public strata::testing::ClusterTest {};

TEST_F(MoeTrainingTest, StanzaTrainsTheMoeHeadAndKeepsItsExpertsLocal) {
  const auto [code, out] =
      RunCommand(kBin + "strata_launch --config " + kMoeConfig +
                 " --mode stanza --conv-workers 2 --fc-workers 1 --max-steps 300 --epochs 1"
                 " --progress=false --summary-out " +
                 dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json s = Summary(dir_ + "/s.json");
  EXPECT_EQ(s["steps"], 300);
  // 300 of 937 steps of one epoch already classify most of the test set.
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.78) << out;
  // The 8.4 M expert parameters never travel: a step moves the boundary
  // activations, their gradients and the trunk's 18.8 K parameters (< 2.5 MB).
  EXPECT_LT(s["bytes_per_iteration"].get<double>(), 2.5e6) << out;
  EXPECT_GT(s["parameters"].get<int64_t>(), 8 * 1024 * 1024);
}

// The FC workers gather the experts together before FC worker 0 evaluates;
// without evaluation none of them may wait for that.
TEST_F(MoeTrainingTest, TwoFcWorkersWithoutEvaluationFinishTogether) {
  const auto [code, out] =
      RunCommand(kBin + "strata_launch --config " + kMoeConfig +
                 " --mode stanza --conv-workers 2 --fc-workers 2 --max-steps 40 --epochs 1"
                 " --evaluate=false --progress=false --timeout 30 --summary-out " +
                 dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(Summary(dir_ + "/s.json")["steps"], 40);
}

}  // namespace
}  // namespace strata::moe
