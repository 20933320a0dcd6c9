// SeCBAD's segment inference (scheduler/secbad): segment priors and their
// hazards, the Normal-Gamma observation model, and the run-length posterior
// on synthetic piecewise-constant signals, where every change point is
// known: how soon each is found, how often one is found where there is
// none, that the posterior is a distribution, and what a step costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/util/rng.h"
#include "scheduler/secbad/observation_model.h"
#include "scheduler/secbad/run_length_posterior.h"
#include "scheduler/secbad/segment_prior.h"

namespace strata::secbad {
namespace {

TEST(SegmentPriorTest, TheTruncatedNormalIsSeCbadsSegmentLengthLaw) {
  const SegmentPrior prior = *SegmentPrior::TruncatedNormal(80, 20, 10);
  double total = 0;
  for (int r = 1; r <= 1000; ++r) total += prior.Probability(r);
  EXPECT_NEAR(total, 1.0, 1e-9);
  EXPECT_EQ(prior.Probability(9), 0.0);  // never shorter than 10
  // max(N(80, 20), 10): everything below 10.5 lands on 10.
  EXPECT_NEAR(prior.Probability(10), 0.5 * std::erfc((80 - 10.5) / (20 * std::sqrt(2.0))), 1e-12);
  EXPECT_NEAR(prior.MeanLength(), 80.0, 0.05);
  // The hazard: P(L = r) / P(L >= r); nothing ends before 10, and it
  // rises with the run.
  EXPECT_EQ(prior.Hazard(5), 0.0);
  double survival = 1.0;
  for (int r = 1; r < 80; ++r) survival -= prior.Probability(r);
  EXPECT_NEAR(prior.Hazard(80), prior.Probability(80) / survival, 1e-12);
  EXPECT_LT(prior.Hazard(60), prior.Hazard(80));
  EXPECT_LT(prior.Hazard(80), prior.Hazard(120));
  EXPECT_EQ(prior.Hazard(5000), 1.0);
  EXPECT_EQ(SegmentPrior::TruncatedNormal(80, 0, 10).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SegmentPriorTest, ALongTruncatedNormalKeepsItsTailHazards) {
  // Segments of 1000 +- 600 iterations: nothing cuts them off at a fixed
  // length, and the hazard far out follows the normal's tail, (r - mean) /
  // sd^2 to first order, instead of rounding noise.
  const SegmentPrior prior = *SegmentPrior::TruncatedNormal(1000, 600, 20);
  EXPECT_NEAR(prior.Hazard(1000), 0.00133, 0.00001);
  EXPECT_NEAR(prior.Hazard(2000), 0.00346, 0.00001);
  EXPECT_NEAR(prior.MeanLength(), 1012.9, 0.1);  // the clamp at 20 lifts it
  const SegmentPrior short_one = *SegmentPrior::TruncatedNormal(300, 100, 20);
  // 8 sd out: h = 1 - Q(8.005) / Q(7.995) for the normal's upper tail Q.
  EXPECT_NEAR(short_one.Hazard(1100), 0.0780, 0.0001);
  EXPECT_LT(short_one.Hazard(1100), short_one.Hazard(1200));
  EXPECT_LT(short_one.Hazard(1200), 1.0);
  EXPECT_EQ(short_one.Hazard(1301), 1.0);  // past mean + 10 sd every segment has ended
  EXPECT_EQ(SegmentPrior::TruncatedNormal(1e6, 1e5, 20).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SegmentPriorTest, ConstantAndEmpiricalHazards) {
  const SegmentPrior constant = *SegmentPrior::ConstantHazard(0.05);
  EXPECT_EQ(constant.Hazard(1), 0.05);
  EXPECT_EQ(constant.Hazard(300), 0.05);
  EXPECT_NEAR(constant.MeanLength(), 20.0, 1e-12);
  EXPECT_NEAR(constant.Probability(3), 0.05 * 0.95 * 0.95, 1e-15);
  EXPECT_FALSE(SegmentPrior::ConstantHazard(0).ok());
  EXPECT_FALSE(SegmentPrior::ConstantHazard(1.5).ok());

  // Lengths 2, 2, 4, 4 seen: half the segments end at 2, the rest at 4.
  const SegmentPrior empirical = *SegmentPrior::Empirical({2, 4, 2, 4});
  EXPECT_EQ(empirical.Hazard(1), 0.0);
  EXPECT_DOUBLE_EQ(empirical.Hazard(2), 0.5);
  EXPECT_EQ(empirical.Hazard(3), 0.0);
  EXPECT_EQ(empirical.Hazard(4), 1.0);
  EXPECT_DOUBLE_EQ(empirical.MeanLength(), 3.0);
  EXPECT_EQ(SegmentPrior::Empirical({}).status().message(),
            "empirical segment prior: no segment lengths given");
  EXPECT_EQ(SegmentPrior::Empirical({3, 0}).status().message(),
            "empirical segment prior: segment length 0 is not at least 1");
}

TEST(NormalGammaModelTest, PredictivesAndBeliefsFollowTheConjugateUpdate) {
  NormalGammaPrior p;
  p.mean = 0;
  p.strength = 1;
  p.shape = 2;
  p.rate = 2;
  NormalGammaModel model = *NormalGammaModel::Create({p});
  model.Reset(3);
  double out[4];
  const double x0 = 0.5;
  model.LogPredictive(&x0, out);
  // Prior predictive: Student-t, 4 degrees of freedom, scale^2 = 2 * 2 / 2 = 2.
  const double t4 = std::lgamma(2.5) - std::lgamma(2.0) - 0.5 * std::log(4 * M_PI * 2) -
                    2.5 * std::log1p(0.25 / (4 * 2));
  for (double v : out) EXPECT_NEAR(v, t4, 1e-12);  // every slot is the prior yet
  model.Observe(&x0);
  const double x1 = 2.0;
  model.Observe(&x1);
  // Slot 1: only x1 = 2. kappa 2, mu 1, alpha 2.5, beta 2 + 1 * (2 - 0)^2 / 4 = 3.
  const ContextBelief one = model.BeliefOf(1);
  EXPECT_DOUBLE_EQ(one.mean[0], 1.0);
  EXPECT_DOUBLE_EQ(one.variance[0], 3.0 / (2 * 1.5));
  // Slot 2 and 3 (only two seen): x0 and x1. kappa 3, mu 2.5 / 3.
  EXPECT_DOUBLE_EQ(model.BeliefOf(2).mean[0], 2.5 / 3);
  EXPECT_DOUBLE_EQ(model.BeliefOf(3).mean[0], 2.5 / 3);
  EXPECT_DOUBLE_EQ(model.BeliefOf(0).mean[0], 0.0);  // the prior stays
  EXPECT_EQ(NormalGammaModel::Create({NormalGammaPrior{0, 1, 1, 1}}).status().message(),
            "Normal-Gamma observation model: dimension 0 has strength 1, shape 1 and rate 1 "
            "(strength and rate must be positive, the shape above 1)");
}

// A piecewise-constant signal with unit Gaussian noise: segment lengths
// from the prior's law, each segment's level between `jump` and
// `jump` + 1 noise deviations above or below the last one (within +-6).
struct Signal {
  std::vector<double> values;
  std::vector<int> changes;  // index of each segment's first value, the first excluded
};

Signal MakeSignal(uint64_t seed, int length, double jump) {
  Rng rng(seed);
  Signal s;
  double level = 0;
  int next_change = 0;
  for (int t = 0; t < length; ++t) {
    if (t == next_change) {
      const double step = jump + rng.Uniform();
      level = level + step > 6      ? level - step
              : level - step < -6   ? level + step
              : rng.Uniform() < 0.5 ? level - step
                                    : level + step;
      if (t > 0) s.changes.push_back(t);
      next_change = t + std::max(10, static_cast<int>(std::lround(80 + 20 * rng.Normal())));
    }
    s.values.push_back(level + rng.Normal());
  }
  return s;
}

RunLengthPosterior MakeInference(int window, OutlierModel outliers = {}) {
  return RunLengthPosterior(*SegmentPrior::TruncatedNormal(80, 20, 10),
                            std::make_unique<NormalGammaModel>(*NormalGammaModel::Create(
                                {NormalGammaPrior::For(0, 1, 4)}, std::move(outliers))),
                            window);
}

TEST(RunLengthPosteriorTest, ChangesOfTwoNoiseDeviationsAreFoundWithinThreeStepsAndFewFalseAlarms) {
  std::vector<int> delays;
  int false_alarms = 0, missed = 0;
  int64_t observed = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Signal signal = MakeSignal(seed, 1000, 2.0);
    RunLengthPosterior inference = MakeInference(200);
    size_t next = 0;  // the first true change not yet found
    for (int t = 0; t < static_cast<int>(signal.values.size()); ++t) {
      inference.Observe(&signal.values[t]);
      ++observed;
      // Changes passed by more than a segment's shortest length unfound are missed.
      while (next < signal.changes.size() && t - signal.changes[next] >= 10) {
        ++missed;
        ++next;
      }
      if (!inference.change_detected()) continue;
      // A detection places the segment's start; one within 3 steps of a
      // true change finds it (the first time) or refines it, any other is
      // a false alarm.
      const int placed = t - inference.map_run_length() + 1;
      const auto near = [placed](int change) { return std::abs(placed - change) <= 3; };
      if (next < signal.changes.size() && t >= signal.changes[next] && near(signal.changes[next])) {
        delays.push_back(t - signal.changes[next]);
        ++next;
      } else if (std::none_of(signal.changes.begin(), signal.changes.end(), near)) {
        ++false_alarms;
      }
    }
  }
  ASSERT_FALSE(delays.empty());
  std::sort(delays.begin(), delays.end());
  const int median = delays[delays.size() / 2];
  const double alarms_per_1000 = 1000.0 * false_alarms / static_cast<double>(observed);
  std::printf("changes found %zu, missed %d; median delay %d; false alarms %.2f per 1000\n",
              delays.size(), missed, median, alarms_per_1000);
  EXPECT_LE(median, 3);
  EXPECT_LE(alarms_per_1000, 5.0);
  EXPECT_LE(missed, static_cast<int>(delays.size()) / 20);  // at most 5% missed
}

TEST(RunLengthPosteriorTest, ThePosteriorIsADistributionAndAStepCostsTheWindowNotTheHistory) {
  const Signal signal = MakeSignal(7, 3000, 2.0);
  for (int window : {50, 200}) {
    RunLengthPosterior inference = MakeInference(window);
    EXPECT_TRUE(inference.posterior().empty());
    int64_t most = 0;
    for (size_t t = 0; t < signal.values.size(); ++t) {
      inference.Observe(&signal.values[t]);
      const std::vector<double>& p = inference.posterior();
      ASSERT_EQ(p.size(), static_cast<size_t>(window));
      EXPECT_NEAR(std::accumulate(p.begin(), p.end(), 0.0), 1.0, 1e-9) << t;
      EXPECT_TRUE(std::all_of(p.begin(), p.end(), [](double v) { return v >= 0; }));
      most = std::max(most, inference.last_step_work());
      // Run lengths cannot exceed what has been seen.
      EXPECT_LE(inference.map_run_length(), static_cast<int>(t) + 1);
    }
    // Counted, not timed: the posterior's hypotheses and the model's
    // slots, each a constant number of times, whatever the history.
    EXPECT_LE(most, 4 * (window + 1));
    EXPECT_GE(most, window);
  }
}

TEST(RunLengthPosteriorTest, TheMapSegmentsBeliefIsTheLevelOfTheCurrentSegment) {
  // 60 values at 3, then 60 at -2: after the change the MAP segment's
  // belief forgets the old level, the mixture's variance tells the doubt.
  Rng rng(3);
  RunLengthPosterior inference = MakeInference(200);
  for (int t = 0; t < 120; ++t) {
    const double x = (t < 60 ? 3.0 : -2.0) + 0.5 * rng.Normal();
    inference.Observe(&x);
    if (t == 59) {
      EXPECT_NEAR(inference.MapBelief().mean[0], 3.0, 0.3);
      EXPECT_GE(inference.map_run_length(), 55);
    }
  }
  EXPECT_NEAR(inference.MapBelief().mean[0], -2.0, 0.3);
  EXPECT_LE(std::abs(inference.map_run_length() - 60), 3);
  EXPECT_NEAR(inference.MixtureBelief().mean[0], -2.0, 0.3);
  EXPECT_GT(inference.ProbabilityOfRunAtMost(70), 0.99);
  inference.Reset();
  EXPECT_EQ(inference.map_run_length(), 0);
  EXPECT_TRUE(inference.posterior().empty());
}

// One stray reading, 8 noise deviations off, inside a segment: a model
// that expects no outliers believes a new segment began there; one that
// expects them (5%, anywhere in [-10, 10]) keeps the segment. A real
// change of 3 deviations is still found by both, the outlier model a step
// or two later.
TEST(RunLengthPosteriorTest, AModelThatExpectsOutliersIsNotFooledByOneButFindsARealChange) {
  const OutlierModel outliers{0.05, {-10}, {10}};
  Rng rng(5);
  std::vector<double> values;
  for (int t = 0; t < 140; ++t) values.push_back(0.5 * rng.Normal());
  values[60] = 4.0;                                  // the stray reading
  for (int t = 100; t < 140; ++t) values[t] += 1.5;  // a real change at 100
  RunLengthPosterior gaussian = MakeInference(200);
  RunLengthPosterior robust = MakeInference(200, outliers);
  auto found_at = [&values](RunLengthPosterior& inference, int from, int to) {
    for (int t = from; t < to; ++t) {
      inference.Observe(&values[t]);
      if (inference.change_detected()) return t;
    }
    return -1;
  };
  EXPECT_EQ(found_at(gaussian, 0, 61), 60);
  EXPECT_EQ(found_at(robust, 0, 100), -1);
  EXPECT_EQ(robust.map_run_length(), 100);
  const int found = found_at(robust, 100, 140);
  EXPECT_GE(found, 100);
  EXPECT_LE(found, 104);
  for (int t = found + 1; t < 140; ++t) robust.Observe(&values[t]);
  EXPECT_NEAR(robust.MapBelief().mean[0], 1.5, 0.3);

  EXPECT_EQ(NormalGammaModel::Create({NormalGammaPrior::For(0, 1, 4)}, {1.0, {-1}, {1}})
                .status()
                .message(),
            "Normal-Gamma observation model: the outlier rate must be in [0, 1), got 1");
  EXPECT_EQ(NormalGammaModel::Create({NormalGammaPrior::For(0, 1, 4)}, {0.1, {1}, {1}})
                .status()
                .message(),
            "Normal-Gamma observation model: outliers need a range low < high for each of the 1 "
            "dimensions");
}

}  // namespace
}  // namespace strata::secbad
