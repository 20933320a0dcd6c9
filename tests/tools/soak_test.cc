// strata_bench soak, briefly: 16 clients against 2 real servers, every
// round timed, memory sampled, the report and plot written.
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/cluster_fixture.h"
#include "tools/bench/soak_bench.h"

namespace strata {
namespace {

class SoakTest : public testing::ClusterTest {};

TEST_F(SoakTest, AShortSoakHasNoErrorsAndReportsLatencyAndMemoryPerWindow) {
  const auto [code, out] = testing::RunCommand(
      testing::kBin + "strata_bench soak --minutes 0.2 --json " + dir_ + "/soak.json --plot " +
      dir_ + "/soak.png");
  // No client error, and no server keeps memory per round beyond what a
  // settling working set does (the leak check, JudgeMemory, tested below).
  EXPECT_EQ(code, 0) << out;
  const nlohmann::json j = Summary(dir_ + "/soak.json");
  ASSERT_EQ(j["rss_bytes_per_round"].size(), 2u) << j;
  for (const auto& b : j["rss_bytes_per_round"]) EXPECT_LE(b.get<double>(), 4096.0) << j;
  EXPECT_EQ(j["clients"], 16);
  EXPECT_EQ(j["servers"], 2);
  EXPECT_TRUE(j["errors"].empty()) << j["errors"];
  EXPECT_GT(j["rounds"].get<int64_t>(), 16);
  ASSERT_EQ(j["windows"].size(), 20u);
  int64_t rounds = 0;
  for (const auto& w : j["windows"]) {
    rounds += w["rounds"].get<int64_t>();
    EXPECT_EQ(w["rss_mib"].size(), 2u);
    // Every window made progress: no stall, and latencies that were timed.
    EXPECT_GT(w["rounds"].get<int64_t>(), 0) << w;
    EXPECT_GT(w["p50_ms"].get<double>(), 0.0) << w;
  }
  EXPECT_EQ(rounds, j["rounds"].get<int64_t>());
  EXPECT_GT(j["windows"][19]["rss_mib"][0].get<double>(), 1.0) << j["windows"][19];
  EXPECT_EQ(testing::ReadFile(dir_ + "/soak.png").substr(1, 3), "PNG");
}

// The leak check: a working set that settles in steps passes; memory that
// grows with the rounds fails, naming the server.
TEST(JudgeMemoryTest, MemoryThatGrowsWithTheWorkIsALeakAndSettlingIsNot) {
  using bench::JudgeMemory;
  using bench::MemorySample;
  std::vector<double> round_ends;
  for (int i = 0; i < 10000; ++i) round_ends.push_back(i * 0.001);  // 10 s, 1000 rounds/s
  const int64_t mib = 1 << 20;
  // Server 0 settles: two pool steps of 1 MiB, then flat. Server 1 leaks
  // 8 KiB per round.
  std::vector<MemorySample> memory;
  for (int s = 0; s <= 10; ++s) {
    const int64_t settled = 30 * mib + (s >= 3 ? mib : 0) + (s >= 5 ? mib : 0);
    memory.push_back({static_cast<double>(s), {settled, 30 * mib + int64_t{8192} * 1000 * s}});
  }
  std::vector<double> per_round;
  const absl::Status verdict = JudgeMemory(memory, round_ends, 2.0, 4096, &per_round);
  ASSERT_EQ(per_round.size(), 2u);
  EXPECT_NEAR(per_round[0], 2.0 * mib / 8000, 1);  // 262 bytes per round
  EXPECT_NEAR(per_round[1], 8192, 2);
  EXPECT_EQ(verdict.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(verdict.message(),
            "server 1 kept 8192 bytes per round after the warm-up (62.5 MiB over 8000 rounds; the "
            "limit is 4096): a leak");
  memory[10].rss[1] = memory[2].rss[1] + mib;  // server 1 settled after all
  EXPECT_TRUE(JudgeMemory(memory, round_ends, 2.0, 4096, &per_round).ok());
}

TEST_F(SoakTest, ANonsenseDurationIsRefused) {
  const auto [code, out] = testing::RunCommand(testing::kBin + "strata_bench soak --minutes 0");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("soak: --minutes > 0"), std::string::npos) << out;
}

}  // namespace
}  // namespace strata
