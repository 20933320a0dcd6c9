// strata_bench soak, briefly: 16 clients against 2 real servers, every
// round timed, memory sampled, the report and plot written.
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

class SoakTest : public testing::ClusterTest {};

TEST_F(SoakTest, AShortSoakHasNoErrorsAndReportsLatencyAndMemoryPerWindow) {
  const auto [code, out] = testing::RunCommand(
      testing::kBin + "strata_bench soak --minutes 0.2 --json " + dir_ + "/soak.json --plot " +
      dir_ + "/soak.png");
  // Memory may still be settling in a run this short: the only failure
  // allowed is the growth check, never a client error.
  if (code != 0) {
    EXPECT_NE(out.find("RSS grew by"), std::string::npos) << out;
  }
  const nlohmann::json j = Summary(dir_ + "/soak.json");
  EXPECT_EQ(j["clients"], 16);
  EXPECT_EQ(j["servers"], 2);
  EXPECT_TRUE(j["errors"].empty()) << j["errors"];
  EXPECT_GT(j["rounds"].get<int64_t>(), 16);
  ASSERT_EQ(j["windows"].size(), 20u);
  int64_t rounds = 0;
  for (const auto& w : j["windows"]) {
    rounds += w["rounds"].get<int64_t>();
    EXPECT_EQ(w["rss_mib"].size(), 2u);
    if (w["rounds"].get<int64_t>() > 0) {
      EXPECT_GT(w["p50_ms"].get<double>(), 0.0);
      EXPECT_GE(w["p99_ms"].get<double>(), w["p50_ms"].get<double>());
    }
  }
  EXPECT_EQ(rounds, j["rounds"].get<int64_t>());
  EXPECT_GT(j["windows"][19]["rss_mib"][0].get<double>(), 1.0) << j["windows"][19];
  EXPECT_EQ(testing::ReadFile(dir_ + "/soak.png").substr(1, 3), "PNG");
}

TEST_F(SoakTest, ANonsenseDurationIsRefused) {
  const auto [code, out] = testing::RunCommand(testing::kBin + "strata_bench soak --minutes 0");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("soak: --minutes > 0"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
