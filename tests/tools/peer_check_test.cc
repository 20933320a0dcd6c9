// strata_bench's comparisons start by checking that the PyTorch peers
// compute what Strata computes (tools/bench/train_check.h, moe_bench.cc).
// Skipped where Debian's python3-torch and python3-torchvision are not
// installed (tools/setup.sh --bench installs them).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"

namespace strata::bench {
namespace {

using strata::testing::kBin;
using strata::testing::RunCommand;

class PeerCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (RunCommand("/usr/bin/python3 -c 'import torch, torchvision'").first != 0) {
      STRATA_SKIP_WITHOUT("torch")
          << "/usr/bin/python3 cannot import torch and torchvision (tools/setup.sh "
             "--bench installs them)";
    }
  }
};

TEST_F(PeerCheckTest, TrainPeerHasStratasParametersAndFirstLoss) {
  const auto [code, out] =
      RunCommand(kBin + "strata_bench train --config " + strata::testing::kConfig +
                 " --modes single --steps 2 --repeat 1 --threads 1");
  ASSERT_EQ(code, 0) << out;
  // Strata keeps each row's loss in float32 (the loss runs on the model's
  // backend) and averages in double; PyTorch averages in float32.
  EXPECT_NE(out.find("same computation: 1630090 parameters each; first-batch loss from the same "
                     "weights 2.293786 (strata) and 2.293787 (pytorch)"),
            std::string::npos)
      << out;
}

TEST_F(PeerCheckTest, MoePeersComputeStratasOutputAndInputGradient) {
  const auto [code, out] =
      RunCommand(kBin +
                 "strata_bench moe --tokens 512 --dim 64 --hidden 128 --experts 4 --repeat 1 "
                 "--threads 1");
  ASSERT_EQ(code, 0) << out;
  for (const char* peer : {"pytorch einsum", "pytorch sparse"}) {
    const size_t row = out.find(peer);
    ASSERT_NE(row, std::string::npos) << out;
    EXPECT_NE(out.substr(row, out.find('\n', row) - row).find("same result: output"),
              std::string::npos)
        << out;
  }
}

// `strata_bench reference` on one torchvision model and one residual model
// the peer builds from the config: same parameter counts, and the forward
// and every gradient within 1e-4 of the tensor's largest magnitude.
TEST_F(PeerCheckTest, ReferenceModelsComputeStratasForwardAndGradients) {
  const std::string configs = std::string(STRATA_SOURCE_DIR) + "/configs/";
  const auto [code, out] = RunCommand(kBin + "strata_bench reference --threads 1 --config " +
                                      configs + "alexnet.json," + configs + "resnet20_cifar.json");
  ASSERT_EQ(code, 0) << out;
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"alexnet          torchvision", "61100840    61100840"},
      {"resnet20_cifar   the config's layers", "272474      272474"}};
  for (const auto& [row, parameters] : rows) {
    const size_t at = out.find(row);
    ASSERT_NE(at, std::string::npos) << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find(parameters), std::string::npos) << line;
    EXPECT_EQ(line.substr(line.size() - 4), "same") << line;
  }
  EXPECT_NE(out.find("same computation: every output within 1e-04; every gradient too\n"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace strata::bench
