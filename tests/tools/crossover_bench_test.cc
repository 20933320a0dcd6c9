// strata_bench crossover end to end: two jobs alone and together under
// every policy on a real local cluster, its report's bound and fractions,
// its timeline, and the arguments it refuses.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBatchNormConfig;
using testing::kBin;
using testing::kConfig;
using testing::ReadFile;
using testing::RunCommand;

class CrossoverBenchTest : public testing::ClusterTest {};

TEST_F(CrossoverBenchTest, ReportsEveryPolicyAgainstTheBoundOfTheJobsOwnIterations) {
  const std::string json = dir_ + "/crossover.json";
  const std::string png = dir_ + "/timeline.png";
  const auto [code, out] =
      RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," + kBatchNormConfig +
                 " --conv-workers 1 --steps 6 --repeat 1 --threads 1 --weights 1,3 --json " + json +
                 " --timeline " + png);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("crossover/exclusive "), std::string::npos) << out;
  EXPECT_NE(out.find("crossover: contested device time job 1 "), std::string::npos) << out;
  EXPECT_NE(out.find("(weight 75.0%)"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(png).substr(1, 3), "PNG");
  const nlohmann::json j = Summary(json);
  const double c = j["compute_seconds_per_iteration"].get<double>();
  const double m = j["communication_seconds_per_iteration"].get<double>();
  ASSERT_GT(c, 0.0);
  ASSERT_GT(m, 0.0);
  // Both configs train batches of 64: 128 images per pair of iterations.
  EXPECT_NEAR(j["ideal_images_per_sec"].get<double>(), 128 / std::max(c, m), 1e-6);
  EXPECT_NEAR(j["in_turns_images_per_sec"].get<double>(), 128 / (c + m), 1e-6);
  for (const char* policy : {"exclusive", "naive", "crossover"}) {
    const nlohmann::json& p = j["policies"][policy];
    ASSERT_EQ(p["images_per_sec"].size(), 1u) << policy;  // one round
    const double median = p["median"].get<double>();
    EXPECT_GT(median, 0.0) << policy;
    EXPECT_NEAR(p["fraction_of_ideal"].get<double>(),
                median / j["ideal_images_per_sec"].get<double>(), 1e-9);
  }
  // Two jobs' shares of the time they contended for, per round and their
  // medians. Naive jobs never wait for the device: no shares.
  EXPECT_EQ(j["weights"], "1,3");
  const nlohmann::json& shares = j["policies"]["crossover"]["contested_share"];
  ASSERT_EQ(shares.size(), 2u) << j.dump();
  EXPECT_NEAR(shares[0].get<double>() + shares[1].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(j["policies"]["crossover"]["contested_share_per_round"][0].size(), 1u);
  EXPECT_EQ(j["policies"]["naive"].count("contested_share"), 0u);
  EXPECT_NEAR(j["crossover_over_exclusive"].get<double>(),
              j["policies"]["crossover"]["median"].get<double>() /
                  j["policies"]["exclusive"]["median"].get<double>(),
              1e-9);
}

// A sweep over two emulated link rates: a point per rate in the report, the
// throughput of every policy against the rate and the last point's timeline.
TEST_F(CrossoverBenchTest, ASweepReportsEachLinkRateAndDrawsThroughputAndTimeline) {
  const std::string json = dir_ + "/sweep.json";
  const std::string png = dir_ + "/sweep.png";
  const auto [code, out] =
      RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," + kBatchNormConfig +
                 " --conv-workers 1 --steps 4 --repeat 1 --threads 1 --policies naive,crossover "
                 "--sweep bandwidth=500mbit,2gbit --json " +
                 json + " --plot " + png);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("sweep: link"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(png).substr(1, 3), "PNG");
  EXPECT_EQ(ReadFile(dir_ + "/sweep.timeline.png").substr(1, 3), "PNG");
  const nlohmann::json j = Summary(json);
  EXPECT_EQ(j["sweep"], "bandwidth");
  ASSERT_EQ(j["points"].size(), 2u);
  EXPECT_EQ(j["points"][0]["bandwidth"], "500mbit");
  EXPECT_EQ(j["points"][1]["bandwidth"], "2gbit");
  for (const nlohmann::json& point : j["points"]) {
    EXPECT_GT(point["policies"]["crossover"]["median"].get<double>(), 0.0);
    EXPECT_EQ(point["policies"].count("exclusive"), 0u);
  }
}

TEST_F(CrossoverBenchTest, OneJobOrAnUnknownPolicyIsRefused) {
  auto [code, out] = RunCommand(kBin + "strata_bench crossover --jobs " + kConfig);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("strata_bench: error: --jobs: name two or more job configs"),
            std::string::npos)
      << out;
  std::tie(code, out) = RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," +
                                   kConfig + " --policies exclusive,fifo");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("--policies fifo: use exclusive, naive or crossover"), std::string::npos)
      << out;
  std::tie(code, out) = RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," +
                                   kConfig + " --plot x.png");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("--plot needs --sweep bandwidth="), std::string::npos) << out;
  std::tie(code, out) = RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," +
                                   kConfig + " --sweep latency=1ms");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("crossover sweeps bandwidth="), std::string::npos) << out;
  std::tie(code, out) = RunCommand(kBin + "strata_bench crossover --jobs " + kConfig + "," +
                                   kConfig + " --weights 1,0");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("--weights: '0' is not a positive number"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
