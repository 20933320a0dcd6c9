// SeCBAD's learning parts (scheduler/secbad): the windy grid world, the
// context trackers the contenders differ by, the actor-critic networks and
// their policy files, PPO on problems whose answer is known, and the
// planner the grid world's beliefs are measured with.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/train/checkpoint.h"
#include "experiments/gridworld.h"
#include "experiments/gridworld_experiment.h"
#include "experiments/gridworld_planner.h"
#include "scheduler/secbad/actor_critic.h"
#include "scheduler/secbad/context_tracker.h"
#include "scheduler/secbad/ppo.h"

namespace strata::secbad {
namespace {

SegmentPrior Prior() { return *SegmentPrior::TruncatedNormal(80, 20, 10); }

TEST(GridworldTest, TheWindsCourseDependsOnTheSeedAloneAndSegmentsFollowThePrior) {
  WindyGridworld a(GridworldOptions{}, Prior(), 5), b(GridworldOptions{}, Prior(), 5);
  int steps = 0, changes = 0;
  for (int episode = 0; episode < 50; ++episode) {
    a.Reset();
    b.Reset();
    for (int t = 0; t < 200; ++t) {
      // Different agents, the same winds at the same steps.
      const WindyGridworld::Outcome oa = a.Act(1 + t % 4), ob = b.Act(0);
      EXPECT_EQ(a.wind(), b.wind());
      EXPECT_EQ(oa.wind_changed, ob.wind_changed);
      EXPECT_EQ(oa.done, t == 199);
      for (double w : a.wind()) EXPECT_LE(std::abs(w), 0.9);
      // A stay sees nothing of the wind.
      EXPECT_TRUE(std::isnan(ob.pushed[0]) && std::isnan(ob.pushed[1]));
      changes += oa.wind_changed ? 1 : 0;
      ++steps;
    }
    EXPECT_EQ(a.changes(), b.changes());
  }
  // Segments of about 80 steps, the first of each episode cut at 200.
  EXPECT_GT(changes, steps / 120);
  EXPECT_LT(changes, steps / 60);
}

TEST(GridworldTest, MovesArePushedOnBothAxesAndTheGoalPaysAndSendsTheAgentBack) {
  // No wind: moves go one cell, the pushes seen are 0.
  GridworldOptions calm;
  calm.max_wind = 0;
  WindyGridworld world(calm, Prior(), 1);
  WindyGridworld::Outcome o = world.Act(2);  // right
  EXPECT_EQ(world.x(), 1);
  EXPECT_EQ(world.y(), 0);
  EXPECT_EQ(o.pushed[0], 0.0);
  EXPECT_EQ(o.pushed[1], 0.0);
  EXPECT_DOUBLE_EQ(o.reward, 0.0);  // a step off the goal earns nothing
  o = world.Act(4);                 // left, back to 0
  o = world.Act(4);                 // left against the edge: the x push is not seen
  EXPECT_EQ(world.x(), 0);
  EXPECT_TRUE(std::isnan(o.pushed[0]));
  EXPECT_EQ(o.pushed[1], 0.0);
  for (int a : {2, 2, 2, 1, 1}) world.Act(a);
  o = world.Act(1);  // onto (3, 3)
  EXPECT_DOUBLE_EQ(o.reward, 1.0);
  EXPECT_EQ(world.x(), 0);
  EXPECT_EQ(world.y(), 0);
  // With wind, the pushes seen average to it on each axis.
  WindyGridworld windy(GridworldOptions{}, Prior(), 9);
  double sum[2] = {0, 0}, n[2] = {0, 0};
  const auto w = windy.wind();  // the first segment's, at least 10 steps long
  for (int t = 0; t < 10; ++t) {
    const WindyGridworld::Outcome step = windy.Act(t % 2 == 0 ? 2 : 4);
    for (int axis = 0; axis < 2; ++axis) {
      if (std::isnan(step.pushed[axis])) continue;
      EXPECT_TRUE(step.pushed[axis] == 0 || step.pushed[axis] == (w[axis] > 0 ? 1 : -1));
      sum[axis] += step.pushed[axis];
      ++n[axis];
    }
  }
  ASSERT_GT(n[0] + n[1], 0);
  // Only pushes the wind can give were seen; enough of them to show its sign.
  for (int axis = 0; axis < 2; ++axis) {
    if (n[axis] > 0 && std::abs(w[axis]) > 0.3) {
      EXPECT_GT(sum[axis] * w[axis], 0.0) << axis;
    }
  }
}

TEST(GridworldTest, ALandingIsClampedToTheGridAndSaysWhichPushesStayedWhole) {
  const GridworldOptions world;
  WindyGridworld::Landing l = WindyGridworld::Land(world, 1, 1, /*up=*/1, 0, 1);
  EXPECT_EQ(l.x, 1);
  EXPECT_EQ(l.y, 3);
  EXPECT_TRUE(l.whole[0]);
  EXPECT_TRUE(l.whole[1]);
  // Right from (3, 0), pushed right and down: both pushes meet an edge.
  l = WindyGridworld::Land(world, 3, 0, /*right=*/2, 1, -1);
  EXPECT_EQ(l.x, 4);
  EXPECT_EQ(l.y, 0);
  EXPECT_FALSE(l.whole[0]);
  EXPECT_FALSE(l.whole[1]);
  // A stay goes nowhere and shows nothing.
  l = WindyGridworld::Land(world, 2, 2, /*stay=*/0, 0, 0);
  EXPECT_EQ(l.x, 2);
  EXPECT_EQ(l.y, 2);
  EXPECT_FALSE(l.whole[0]);
}

// SeCBAD's public code's rules: a move is pushed along its own axis only
// (the other axis shows nothing), and the goal holds the agent, paying for
// every step it stays.
TEST(GridworldTest, UnderSecbadCodeRulesMovesArePushedAlongTheirAxisAndTheGoalHolds) {
  const GridworldOptions rules = GridworldOptions::SecbadCodeRules();
  WindyGridworld::Landing l = WindyGridworld::Land(rules, 1, 1, /*up=*/1, 1, 1);
  EXPECT_EQ(l.x, 1);  // the push right is not applied to a move up
  EXPECT_EQ(l.y, 3);
  EXPECT_TRUE(WindyGridworld::Pushes(rules, /*right=*/2, 0));
  EXPECT_FALSE(WindyGridworld::Pushes(rules, /*right=*/2, 1));
  EXPECT_FALSE(WindyGridworld::Pushes(rules, /*stay=*/0, 0));
  EXPECT_TRUE(WindyGridworld::Pushes(GridworldOptions{}, /*right=*/2, 1));

  WindyGridworld windy(rules, Prior(), 9);
  for (int t = 0; t < 20; ++t) {
    const WindyGridworld::Outcome o = windy.Act(t % 2 == 0 ? 1 : 3);  // up, down
    EXPECT_TRUE(std::isnan(o.pushed[0])) << t;
  }
  GridworldOptions calm = rules;
  calm.max_wind = 0;
  WindyGridworld world(calm, Prior(), 1);
  for (int a : {2, 2, 2, 1, 1}) world.Act(a);
  WindyGridworld::Outcome o = world.Act(1);  // onto (3, 3)
  EXPECT_DOUBLE_EQ(o.reward, 1.0);
  EXPECT_EQ(world.x(), 3);
  EXPECT_EQ(world.y(), 3);
  o = world.Act(0);  // staying pays again
  EXPECT_DOUBLE_EQ(o.reward, 1.0);
  o = world.Act(2);  // leaving costs
  EXPECT_DOUBLE_EQ(o.reward, -0.1);
  // The planner stays on the goal whatever the wind.
  auto planner = *GridworldPlanner::Create(rules, 0.95, 3);
  for (double wx : {-0.9, 0.0, 0.9}) {
    for (double wy : {-0.9, 0.0, 0.9}) EXPECT_EQ(planner.Act(3, 3, wx, wy), 0) << wx << " " << wy;
  }
  // On the way, from (0, 2): up, calm or blown hard right. Blown right,
  // right is worth exactly what up is (its values differ by rounding
  // alone), and a tie goes to the lower action whatever the build.
  EXPECT_EQ(planner.Act(0, 2, 0.0, 0.0), 1);
  EXPECT_EQ(planner.Act(0, 2, 0.9, 0.0), 1);
}

TEST(GridworldPlannerTest, InCalmAirItTakesTheShortestPathEveryTime) {
  for (double cost : {0.0, 0.1}) {
    GridworldOptions calm;
    calm.max_wind = 0;
    calm.step_cost = cost;
    auto planner = GridworldPlanner::Create(calm, 0.99, 2);
    ASSERT_TRUE(planner.ok()) << planner.status();
    WindyGridworld world(calm, Prior(), 3);
    double total = 0;
    int first_goal = -1;
    for (int t = 0; t < calm.episode_steps; ++t) {
      const WindyGridworld::Outcome o = world.Act(planner->Act(world.x(), world.y(), 0.0, 0.0));
      total += o.reward;
      if (o.reward > 0 && first_goal < 0) first_goal = t + 1;
    }
    // (0, 0) to (3, 3) is 6 moves: 33 round trips of 5 steps off the goal
    // and one onto it, then 2 more moves.
    EXPECT_EQ(first_goal, 6) << cost;
    EXPECT_NEAR(total, 33 * (1.0 - 5 * cost) - 2 * cost, 1e-9) << cost;
  }
}

TEST(GridworldPlannerTest, TheWindChangesThePlanAndBadSettingsAreRefused) {
  auto planner = *GridworldPlanner::Create(GridworldOptions{}, 0.99, 3);  // -0.9, 0, 0.9
  // From (2, 3), calm, the move right lands on the goal. Blown hard up and
  // right, it lands there once in 100; the move down, 81 times.
  EXPECT_EQ(planner.Act(2, 3, 0.0, 0.0), 2);
  EXPECT_EQ(planner.Act(2, 3, 0.9, 0.9), 3);
  EXPECT_EQ(GridworldPlanner::Create(GridworldOptions{}, 1.0, 19).status().message(),
            "planner discount 1 is not in (0, 1)");
  EXPECT_EQ(GridworldPlanner::Create(GridworldOptions{}, 0.99, 1).status().message(),
            "the planner needs at least 2 winds per axis, not 1");
}

TEST(GridworldExperimentTest, ThePlannerOnTheTrueWindBeatsItOnSeCbadsBeliefWhichBeatsItBlind) {
  GridworldExperimentOptions options;
  options.evaluation_episodes = 200;
  GridworldExperiment experiment(options);
  const double oracle = *experiment.Plan("oracle", 1);
  const double secbad = *experiment.Plan("secbad", 1);
  const double plain = *experiment.Plan("plain", 1);
  EXPECT_GT(oracle, secbad + 0.5);
  EXPECT_GT(secbad, plain + 2.0);
  EXPECT_EQ(experiment.Plan("random", 1).status().code(), absl::StatusCode::kInvalidArgument);
}

GridworldExperimentOptions WithSpread() {
  GridworldExperimentOptions options;
  options.belief_features = "mean-spread";
  return options;
}

TEST(ContextTrackerTest, EachContenderKnowsWhatItShould) {
  GridworldExperiment experiment(WithSpread());
  auto oracle = *experiment.TrackerFor("oracle");
  auto plain = *experiment.TrackerFor("plain");
  auto whole = *experiment.TrackerFor("whole-history");
  auto secbad = *experiment.TrackerFor("secbad");
  auto known = *experiment.TrackerFor("known-segments");
  EXPECT_EQ(plain->features(), 0);
  EXPECT_EQ(oracle->features(), 2);
  EXPECT_EQ(whole->features(), 4);
  EXPECT_EQ(secbad->features(), 4);
  EXPECT_EQ(experiment.TrackerFor("random").status().message(),
            "unknown contender \"random\" (use secbad, constant-hazard, whole-history, plain, "
            "known-segments, oracle, or revealed-after-N)");
  EXPECT_EQ(experiment.TrackerFor("revealed-after-x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(experiment.TrackerFor("revealed-after--1").status().code(),
            absl::StatusCode::kInvalidArgument);
  // 120 steps of wind (0.8, -0.4) pushes, then 40 of (-0.8, 0.4) (the
  // pushes' means), observed as they come.
  for (auto* t : {oracle.get(), whole.get(), secbad.get(), known.get()}) t->Reset();
  Rng rng(4);
  for (int s = 0; s < 160; ++s) {
    const double w[2] = {s < 120 ? 0.8 : -0.8, s < 120 ? -0.4 : 0.4};
    double seen[2];
    for (int axis = 0; axis < 2; ++axis) {
      seen[axis] = rng.Uniform() < std::abs(w[axis]) ? (w[axis] > 0 ? 1 : -1) : 0;
    }
    // The truth a tracker is told is the wind of the next step.
    const double next[2] = {s + 1 < 120 ? 0.8 : -0.8, s + 1 < 120 ? -0.4 : 0.4};
    for (auto* t : {oracle.get(), whole.get(), secbad.get(), known.get()}) t->Observe(seen, next);
  }
  float f[4];
  oracle->Features(f);
  EXPECT_FLOAT_EQ(f[0], -0.8f);
  EXPECT_FLOAT_EQ(f[1], 0.4f);
  // The whole history takes one wind for all of it: the longer first
  // segment's; SeCBAD's MAP segment is the second alone.
  whole->Features(f);
  EXPECT_GT(f[0], 0.3);
  EXPECT_LT(f[1], -0.1);
  secbad->Features(f);
  EXPECT_NEAR(f[0], -0.8, 0.15);
  EXPECT_NEAR(f[1], 0.4, 0.15);
  EXPECT_GT(f[2], 0.0f);  // a standard deviation
  EXPECT_LT(f[2], 0.15f);
  // Told where the second segment began, the belief is its pushes' alone.
  known->Features(f);
  EXPECT_NEAR(f[0], -0.8, 0.15);
  EXPECT_NEAR(f[1], 0.4, 0.15);
}

TEST(ContextTrackerTest, BeliefFeaturesAreTheMeansAloneOrWithTheirSpread) {
  GridworldExperiment experiment(GridworldExperimentOptions{});  // means alone by default
  auto secbad = *experiment.TrackerFor("secbad");
  auto whole = *experiment.TrackerFor("whole-history");
  auto known = *experiment.TrackerFor("known-segments");
  EXPECT_EQ(secbad->features(), 2);
  EXPECT_EQ(whole->features(), 2);
  EXPECT_EQ(known->features(), 2);
  EXPECT_EQ((*experiment.TrackerFor("oracle"))->features(), 2);
  // The same belief either way: the means come first.
  auto spread = *GridworldExperiment(WithSpread()).TrackerFor("secbad");
  secbad->Reset();
  spread->Reset();
  const double seen[2] = {1, 0};
  const double wind[2] = {0.5, 0};
  for (int s = 0; s < 20; ++s) {
    secbad->Observe(seen, wind);
    spread->Observe(seen, wind);
  }
  float mean[2], both[4];
  secbad->Features(mean);
  spread->Features(both);
  EXPECT_EQ(mean[0], both[0]);
  EXPECT_EQ(mean[1], both[1]);
  EXPECT_GT(mean[0], 0.5f);
  GridworldExperimentOptions unknown;
  unknown.belief_features = "variance";
  EXPECT_EQ(GridworldExperiment(unknown).TrackerFor("secbad").status().message(),
            "unknown belief features \"variance\" (use mean, mean-spread or distribution)");
}

TEST(ContextTrackerTest, RevealedAfterNMovesIsTheSegmentsBeliefUntilThenAndTheTruthAfter) {
  GridworldExperiment experiment(WithSpread());
  auto revealed = *experiment.TrackerFor(RevealedContender(3));
  auto known = *experiment.TrackerFor("known-segments");
  ASSERT_EQ(revealed->features(), 4);
  revealed->Reset();
  known->Reset();
  const double wind[2] = {0.5, -0.3};
  const double pushed[2] = {1, 0};
  const double stayed[2] = {NAN, NAN};  // a stay shows nothing: not counted
  float r[4], k[4];
  for (const double* seen : {pushed, stayed, pushed}) {
    revealed->Observe(seen, wind);
    known->Observe(seen, wind);
  }
  // Two moves seen: still the belief from them.
  revealed->Features(r);
  known->Features(k);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r[i], k[i]) << i;
  EXPECT_GT(r[2], 0.0f);
  // The third: the true wind, no spread.
  revealed->Observe(pushed, wind);
  revealed->Features(r);
  EXPECT_FLOAT_EQ(r[0], 0.5f);
  EXPECT_FLOAT_EQ(r[1], -0.3f);
  EXPECT_EQ(r[2], 0.0f);
  EXPECT_EQ(r[3], 0.0f);
  // A new wind from the next step: a new segment, nothing shown yet.
  const double next[2] = {-0.8, 0.8};
  revealed->Observe(pushed, next);
  revealed->Features(r);
  EXPECT_NEAR(r[0], 0.0, 1e-6);  // the prior's mean
  EXPECT_GT(r[2], 0.3f);
  // Given as distributions, it is refused.
  GridworldExperimentOptions options;
  options.belief_features = "distribution";
  EXPECT_EQ(GridworldExperiment(options).TrackerFor("revealed-after-2").status().message(),
            "revealed-after-2 gives the wind's means: use --belief-features mean or mean-spread");
}

TEST(ContextTrackerTest, DistributionFeaturesAreEachAxisGridPosterior) {
  GridworldExperimentOptions options;
  options.belief_features = "distribution";
  GridworldExperiment experiment(options);
  auto secbad = *experiment.TrackerFor("secbad");
  auto known = *experiment.TrackerFor("known-segments");
  // 19 winds per axis, -0.9 to 0.9.
  ASSERT_EQ(secbad->features(), 38);
  EXPECT_EQ(known->features(), 38);
  EXPECT_EQ((*experiment.TrackerFor("oracle"))->features(), 2);
  secbad->Reset();
  // Pushed right every move, never up or down: the x axis's mass on the
  // strongest winds right, the y axis's on calm.
  const double seen[2] = {1, 0};
  const double wind[2] = {0.9, 0};
  for (int s = 0; s < 30; ++s) secbad->Observe(seen, wind);
  float f[38];
  secbad->Features(f);
  double sum_x = 0, sum_y = 0, mean_x = 0;
  for (int g = 0; g < 19; ++g) {
    EXPECT_GE(f[g], 0.0f);
    sum_x += f[g];
    sum_y += f[19 + g];
    mean_x += f[g] * (-0.9 + 0.1 * g);
  }
  EXPECT_NEAR(sum_x, 1.0, 1e-5);
  EXPECT_NEAR(sum_y, 1.0, 1e-5);
  EXPECT_GT(mean_x, 0.8);
  EXPECT_GT(f[19 + 9], 0.5f);            // calm on y
  EXPECT_LT(f[0] + f[1] + f[2], 1e-6f);  // no mass on winds blowing left
  // A Gaussian model has no grid.
  options.observation_model = "normal-gamma";
  EXPECT_EQ(GridworldExperiment(options).TrackerFor("secbad").status().message(),
            "belief features \"distribution\" need the grid observation model, not "
            "\"normal-gamma\"");
}

TEST(ActorCriticTest, APolicyFileReadsBackAndAWrongOneIsRefusedByName) {
  const std::string dir = ::testing::TempDir() + "secbad_policy";
  std::filesystem::create_directories(dir);
  const ActorCriticShape shape{7, 5, 16};
  auto net = *ActorCritic::Create(shape, 3);
  const std::string path = dir + "/p.bin";
  ASSERT_TRUE(net->Save(path, "secbad").ok());
  auto again = ActorCritic::Load(path, shape, "secbad");
  ASSERT_TRUE(again.ok()) << again.status();
  const Tensor x = Tensor::Full({2, 7}, 0.5f);
  EXPECT_EQ(MaxAbsDiff(net->Forward(x, false).logits, (*again)->Forward(x, false).logits), 0.0f);
  EXPECT_EQ(ActorCritic::Load(path, {9, 5, 16}, "secbad").status().message(),
            "--policy-file " + path +
                ": made for 7 inputs, 5 actions and 16 hidden units; this one has 9, 5 and 16");
  EXPECT_EQ(ActorCritic::Load(path, shape, "oracle").status().message(),
            "--policy-file " + path + ": trained as \"secbad\", not as \"oracle\"");
  // A checkpoint of another kind, and a damaged file.
  ASSERT_TRUE(WriteCheckpoint(dir + "/other.ckpt", Checkpoint{}).ok());
  EXPECT_EQ(ActorCritic::Load(dir + "/other.ckpt", shape, "").status().message(),
            "--policy-file " + dir +
                "/other.ckpt: not a SeCBAD policy file (a Strata checkpoint of another kind)");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x7f');
  }
  const absl::Status corrupt = ActorCritic::Load(path, shape, "secbad").status();
  EXPECT_EQ(corrupt.code(), absl::StatusCode::kDataLoss) << corrupt;
  EXPECT_NE(corrupt.message().find("--policy-file " + path), std::string::npos) << corrupt;
  std::filesystem::remove_all(dir);
}

// A contextual bandit: the state says which of 3 actions pays 1 (the rest
// 0). PPO must learn to read it.
TEST(PpoTest, LearnsAContextualBandit) {
  auto net = *ActorCritic::Create({3, 3, 16}, 1);
  PpoOptions options;
  options.minibatch = 64;
  Ppo ppo(*net, options, 2);
  Rng rng(3);
  RolloutBuffer rollout(16, 8, 3);
  double last = 0;
  for (int update = 0; update < 60; ++update) {
    double reward_sum = 0;
    std::vector<int> right(16 * 8);
    for (int t = 0; t < 8; ++t) {
      for (int e = 0; e < 16; ++e) {
        const int k = static_cast<int>(rng.Below(3));
        right[t * 16 + e] = k;
        float* s = rollout.state(t, e);
        for (int j = 0; j < 3; ++j) s[j] = j == k ? 1.0f : 0.0f;
      }
      const Ppo::Actions a = ppo.Act(rollout.states(t), false);
      for (int e = 0; e < 16; ++e) {
        const float r = a.action[e] == right[t * 16 + e] ? 1.0f : 0.0f;
        reward_sum += r;
        rollout.Record(t, e, a.action[e], a.log_prob[e], a.value[e], r, /*done=*/true);
      }
    }
    ppo.Update(rollout);
    last = reward_sum / (16 * 8);
  }
  EXPECT_GT(last, 0.9);  // from 1/3 at random
  const Ppo::Actions greedy =
      ppo.Act(Tensor::FromVector({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1}), true);
  EXPECT_EQ(greedy.action, std::vector<int>({0, 1, 2}));
}

// Credit over time: only the last of 5 steps pays, and only if every step
// took action 1; GAE has to carry it back.
TEST(PpoTest, CarriesADelayedRewardBack) {
  auto net = *ActorCritic::Create({5, 2, 16}, 4);
  PpoOptions options;
  options.minibatch = 80;
  Ppo ppo(*net, options, 5);
  RolloutBuffer rollout(16, 5, 5);
  double last = 0;
  for (int update = 0; update < 120; ++update) {
    std::vector<bool> clean(16, true);
    int paid = 0;
    for (int t = 0; t < 5; ++t) {
      for (int e = 0; e < 16; ++e) {
        float* s = rollout.state(t, e);
        for (int j = 0; j < 5; ++j) s[j] = j == t ? 1.0f : 0.0f;
      }
      const Ppo::Actions a = ppo.Act(rollout.states(t), false);
      for (int e = 0; e < 16; ++e) {
        clean[e] = clean[e] && a.action[e] == 1;
        const float r = t == 4 && clean[e] ? 1.0f : 0.0f;
        paid += r > 0 ? 1 : 0;
        rollout.Record(t, e, a.action[e], a.log_prob[e], a.value[e], r, t == 4);
      }
    }
    ppo.Update(rollout);
    last = paid / 16.0;
  }
  EXPECT_GT(last, 0.85);  // from 1/32 at random
}

}  // namespace
}  // namespace strata::secbad
