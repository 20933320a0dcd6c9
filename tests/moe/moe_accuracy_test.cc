// The MoE head of configs/fashion_mnist_moe.json trained for three epochs in
// stanza mode with its experts split over two FC workers: accuracy and the
// traffic that expert parallelism saves (ctest label "accuracy").
#include <gtest/gtest.h>

#include "tests/support/cluster_fixture.h"

namespace strata::moe {
namespace {

using strata::testing::kBin;
using strata::testing::kMoeConfig;
using strata::testing::RunCommand;

class MoeAccuracyTest : public strata::testing::ClusterTest {};

// The acceptance run: 2 conv workers, 2 FC workers with the experts split
// between them, 3 epochs (~2 minutes on 2 cores).
TEST_F(MoeAccuracyTest, TwoFcWorkersSplitTheExpertsAndReach90PercentInThreeEpochs) {
  const auto [code, out] = RunCommand(kBin + "strata_launch --config " + kMoeConfig +
                                      " --mode stanza --conv-workers 2 --fc-workers 2 --epochs 3"
                                      " --progress=false --summary-out " +
                                      dir_ + "/s.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("[fc worker 0] holds its share of the MoE experts"), std::string::npos) << out;
  EXPECT_NE(out.find("[fc worker 1] holds its share of the MoE experts"), std::string::npos) << out;
  const nlohmann::json s = Summary(dir_ + "/s.json");
  EXPECT_EQ(s["steps"], 3 * 937);
  EXPECT_GE(s["test_accuracy"].get<double>(), 0.90) << out;
  // The servers hold the trunk, fc1, the gate and fc2 (1.63 M parameters,
  // pushed and pulled by both FC workers: ~26 MB); the 8.4 M expert
  // parameters stay split over the FC workers, and only routed tokens cross
  // between them. Replicating the experts through the servers moved 162 MB.
  EXPECT_LT(s["bytes_per_iteration"].get<double>(), 40e6) << out;
  EXPECT_NE(out.find("[server 0] serving 1634186 parameters"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata::moe
