// strata_research secbad-gridworld, briefly: every contender named is trained
// and scored from each seed, the planner scores each belief over the same
// episodes, and the JSON holds the results map the README's figures come
// from; bad flags are refused before any training.
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

class SecbadBenchTest : public testing::ClusterTest {};

TEST_F(SecbadBenchTest, AShortGridworldRunWritesResultsPlannedReturnsAndSeparations) {
  const auto [code, out] = testing::RunCommand(
      testing::kBin +
      "strata_research secbad-gridworld --seeds 2 --training-steps 6400 --evaluation-episodes 64 "
      "--learning-rate 0.0003 "
      "--contenders secbad,plain,oracle --json " +
      dir_ + "/gridworld.json");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json j = Summary(dir_ + "/gridworld.json");
  EXPECT_EQ(j["seeds"], 2);
  EXPECT_EQ(j["training_steps"], 6400);
  EXPECT_EQ(j["evaluation_episodes"], 64);
  EXPECT_DOUBLE_EQ(j["learning_rate"].get<double>(), 0.0003);
  EXPECT_EQ(j["belief_features"], "mean");
  for (const char* c : {"secbad", "plain", "oracle"}) {
    ASSERT_TRUE(j["results"].contains(c)) << j["results"];
    EXPECT_EQ(j["results"][c]["per_seed"].size(), 2u) << c;
    ASSERT_TRUE(j["planned"].contains(c)) << j["planned"];
    EXPECT_EQ(j["planned"][c]["per_seed"].size(), 2u) << c;
    ASSERT_TRUE(j["greedy"].contains(c)) << j["greedy"];
    EXPECT_EQ(j["greedy"][c]["per_seed"].size(), 2u) << c;
  }
  EXPECT_DOUBLE_EQ(
      j["greedy_secbad_over_oracle"].get<double>(),
      j["greedy"]["secbad"]["mean"].get<double>() / j["greedy"]["oracle"]["mean"].get<double>());
  EXPECT_FALSE(j["results"].contains("whole-history"));
  // The planner told the true wind does far better than told nothing, and
  // SeCBAD's belief lies between.
  const double oracle = j["planned"]["oracle"]["mean"].get<double>();
  const double secbad = j["planned"]["secbad"]["mean"].get<double>();
  const double plain = j["planned"]["plain"]["mean"].get<double>();
  EXPECT_GT(oracle, secbad);
  EXPECT_GT(secbad, plain + 1.0);
  EXPECT_DOUBLE_EQ(j["planned_secbad_over_oracle"].get<double>(), secbad / oracle);
  // Told each segment's wind sooner is worth more: after 1 move, more than
  // after 16.
  for (const char* c : {"revealed-after-1", "revealed-after-2", "revealed-after-4",
                        "revealed-after-8", "revealed-after-16"}) {
    ASSERT_TRUE(j["revealed"].contains(c)) << j;
    EXPECT_EQ(j["revealed"][c]["per_seed"].size(), 2u) << c;
    EXPECT_DOUBLE_EQ(j["revealed_over_oracle"][c].get<double>(),
                     j["revealed"][c]["mean"].get<double>() / oracle);
  }
  EXPECT_GT(j["revealed"]["revealed-after-1"]["mean"].get<double>(),
            j["revealed"]["revealed-after-16"]["mean"].get<double>());
  EXPECT_NE(out.find("| revealed-after-4 |"), std::string::npos) << out;
  // SeCBAD is compared with every contender but the oracle.
  ASSERT_TRUE(j["separation"].contains("plain")) << j;
  EXPECT_FALSE(j["separation"].contains("oracle"));
  EXPECT_DOUBLE_EQ(
      j["separation"]["plain"]["difference"].get<double>(),
      j["results"]["secbad"]["mean"].get<double>() - j["results"]["plain"]["mean"].get<double>());
  EXPECT_NE(out.find("| secbad |"), std::string::npos) << out;
  EXPECT_NE(out.find("planned secbad / planned oracle:"), std::string::npos) << out;
}

// --learn=false: the planner's table alone, here on beliefs given as their
// grid distributions (the planner acts on their means: the same scores as
// with the means given).
TEST_F(SecbadBenchTest, WithoutLearningOnlyThePlannerScoresTheBeliefs) {
  // One seed, 64 episodes, nothing trained; the JSON at dir_/`name`.
  const auto plan_only = [&](const std::string& flags, const std::string& name) {
    return testing::RunCommand(testing::kBin +
                               "strata_research secbad-gridworld --seeds 1 --learn=false "
                               "--evaluation-episodes 64 " +
                               flags + " --json " + dir_ + "/" + name);
  };
  const auto [code, out] = plan_only(
      "--belief-features distribution --contenders secbad,known-segments,oracle", "planned.json");
  ASSERT_EQ(code, 0) << out;
  const nlohmann::json j = Summary(dir_ + "/planned.json");
  EXPECT_EQ(j["learned"], false);
  EXPECT_EQ(j["seeds"], 1);
  EXPECT_EQ(j["experiment"], "gridworld");
  EXPECT_EQ(j["belief_features"], "distribution");
  EXPECT_FALSE(j.contains("results")) << j;
  EXPECT_FALSE(j.contains("greedy")) << j;
  EXPECT_FALSE(j.contains("revealed")) << j;  // beliefs as distributions
  EXPECT_EQ(out.find("steps, training"), std::string::npos) << out;
  for (const char* c : {"secbad", "known-segments", "oracle"}) {
    ASSERT_TRUE(j["planned"].contains(c)) << j["planned"];
  }
  EXPECT_GT(j["planned"]["oracle"]["mean"].get<double>(),
            j["planned"]["secbad"]["mean"].get<double>());
  // The same beliefs given as their means: the same acts (up to rounding).
  const auto [means_code, means_out] =
      plan_only("--contenders secbad,known-segments", "means.json");
  ASSERT_EQ(means_code, 0) << means_out;
  const nlohmann::json means = Summary(dir_ + "/means.json");
  for (const char* c : {"secbad", "known-segments"}) {
    EXPECT_NEAR(means["planned"][c]["mean"].get<double>(), j["planned"][c]["mean"].get<double>(),
                0.05)
        << c;
  }
  // Unless told, a step off the goal costs nothing and the return counts
  // the arrivals at the goal; over 200-step episodes a cost of 0.1 makes it
  // 1.1 arrivals - 20, and the best acts are the same under either (up to
  // moves worth the same under the believed wind, whose tie may break
  // differently: then the episodes part ways, so the match is not exact).
  const auto [cost_code, cost_out] =
      plan_only("--step-cost 0.1 --contenders secbad,known-segments", "costed.json");
  ASSERT_EQ(cost_code, 0) << cost_out;
  const nlohmann::json costed = Summary(dir_ + "/costed.json");
  EXPECT_DOUBLE_EQ(means["step_cost"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(costed["step_cost"].get<double>(), 0.1);
  for (const char* c : {"secbad", "known-segments"}) {
    const double arrivals = means["planned"][c]["mean"].get<double>();
    EXPECT_GT(arrivals, 10) << c;
    EXPECT_NEAR(costed["planned"][c]["mean"].get<double>(), 1.1 * arrivals - 20, 0.25) << c;
  }
  // The rules of SeCBAD's code bring their own step cost.
  const auto [code_code, code_out] =
      plan_only("--gridworld-rules secbad-code --contenders oracle", "code.json");
  ASSERT_EQ(code_code, 0) << code_out;
  const nlohmann::json code_rules = Summary(dir_ + "/code.json");
  EXPECT_EQ(code_rules["gridworld_rules"], "secbad-code");
  EXPECT_DOUBLE_EQ(code_rules["step_cost"].get<double>(), 0.1);
}

TEST_F(SecbadBenchTest, BadFlagsAreRefusedBeforeAnyTraining) {
  const auto refused = [](const std::string& flags, const std::string& message) {
    const auto [code, out] =
        testing::RunCommand(testing::kBin + "strata_research secbad-gridworld --seeds 1 " + flags);
    EXPECT_NE(code, 0) << flags;
    EXPECT_NE(out.find(message), std::string::npos) << out;
    EXPECT_EQ(out.find("steps, training"), std::string::npos) << out;
  };
  refused("--evaluation-episodes 0", "--evaluation-episodes must be at least 1");
  refused("--learning-rate 0", "--learning-rate 0 is not in (0, 1)");
  refused("--step-cost -0.1", "--step-cost -0.1 is not in [0, 1] (the goal earns 1)");
  refused("--contenders secbad,random", "unknown contender \"random\"");
  refused("--belief-features variance", "unknown belief features \"variance\"");
  refused("--belief-features distribution --observation-model normal-gamma",
          "belief features \"distribution\" need the grid observation model");
  const auto [code, out] = testing::RunCommand(
      testing::kBin + "strata_research secbad-runtime --learn=false --cost-model none.json");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--learn=false is for secbad gridworld"), std::string::npos) << out;
  const auto [cost_code, cost_out] = testing::RunCommand(
      testing::kBin + "strata_research secbad-runtime --step-cost 0 --cost-model none.json");
  EXPECT_NE(cost_code, 0);
  EXPECT_NE(cost_out.find("--step-cost is for secbad gridworld"), std::string::npos) << cost_out;
  const auto [margin_code, margin_out] = testing::RunCommand(
      testing::kBin + "strata_research secbad-runtime --decision-margin 11 --cost-model none.json");
  EXPECT_NE(margin_code, 0);
  EXPECT_NE(margin_out.find("--decision-margin 11 is not in [0, 10]"), std::string::npos)
      << margin_out;
  const auto [mean_code, mean_out] = testing::RunCommand(
      testing::kBin + "strata_research secbad-runtime --segment-mean 10 --cost-model none.json");
  EXPECT_NE(mean_code, 0);
  EXPECT_NE(mean_out.find("--segment-mean 10 is not in [20, 100000] iterations"), std::string::npos)
      << mean_out;
  const auto [sd_code, sd_out] = testing::RunCommand(
      testing::kBin + "strata_research secbad-runtime --segment-stddev 0 --cost-model none.json");
  EXPECT_NE(sd_code, 0);
  EXPECT_NE(sd_out.find("--segment-stddev 0 is not in (0, --segment-mean]"), std::string::npos)
      << sd_out;
}

}  // namespace
}  // namespace strata
