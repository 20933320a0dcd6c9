// `strata_research secbad`: SeCBAD against its baselines.
//
//   strata_research secbad gridworld --seeds 5 [--training-steps 3000000] [--contenders a,b]
//       [--observation-model grid|normal-gamma] [--json out.json] [--plot posterior.png]
//       [--policy-dir DIR]
//   strata_research secbad runtime --cost-model cost.json --seeds 5 [--training-steps N]
//       [--contenders a,b] [--lag 4] [--decision-margin M] [--segment-mean 300]
//       [--segment-stddev 100] [--json out.json] [--policy-dir DIR]
//   strata_research secbad live ...   (tools/research/secbad_live.h)
//
// gridworld: every contender (experiments/gridworld_experiment.h)
// trained and evaluated from each seed, one after another. runtime: the
// same on the runtime environment of a knob's cost model
// (scheduler/secbad/runtime_environment.h): its learned contenders and the
// changepoint controller, scored by their mean efficiency (the fastest
// value's iteration seconds over those of the value in force). Both
// report the mean and standard deviation over seeds, each contender's
// ratio to the oracle, and whether SeCBAD stands above each baseline by
// more than the two standard errors combined (runtime: also how often each
// asks for a new value). The JSON has a "results"
// map: contender -> {"mean", "std", "per_seed"}. The gridworld's plot is
// the run-length posterior of one episode against its true change points.
// --policy-dir keeps each trained policy as DIR/<contender>-<seed>.bin (a
// runtime one is what strata_launch --controller secbad --policy-file
// runs).
#ifndef STRATA_TOOLS_RESEARCH_SECBAD_EXPERIMENTS_H_
#define STRATA_TOOLS_RESEARCH_SECBAD_EXPERIMENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "experiments/gridworld_experiment.h"
#include "scheduler/secbad/runtime_environment.h"

namespace strata::research {

// The decision margin (scheduler/secbad/knob_policy.h) of the policies
// `secbad runtime` and `secbad live` train for a running job.
inline constexpr double kSecbadDecisionMargin = 0.5;

// How long a running job's contexts hold, in iterations, by default: the
// segment prior `secbad runtime` and `secbad live` train under.
inline constexpr double kSecbadSegmentMean = 300;
inline constexpr double kSecbadSegmentStddev = 100;

struct SecbadExperimentOptions {
  std::string experiment = "gridworld";  // gridworld, runtime
  int seeds = 5;
  int64_t training_steps = 3'000'000;
  std::vector<std::string> contenders;  // empty: all
  std::string json_out;
  std::string plot;
  std::string policy_dir;  // each trained policy as DIR/<contender>-<seed>.bin
  // gridworld: how the belief contenders read the pushes and how many
  // episodes score each (GridworldExperimentOptions' defaults), and PPO's
  // learning rate (PpoOptions' 1e-3, kept a double so the JSON says 0.001).
  std::string observation_model = secbad::GridworldExperimentOptions{}.observation_model;
  std::string belief_features = secbad::GridworldExperimentOptions{}.belief_features;
  // gridworld: "strata" (GridworldOptions' defaults) or "secbad-code"
  // (GridworldOptions::SecbadCodeRules).
  std::string gridworld_rules = "strata";
  // gridworld: what each step that does not land on the goal costs (the
  // goal earns 1); unset, the rules' own (Strata's: none, so a return
  // counts arrivals at the goal; SeCBAD's code's: 0.1).
  std::optional<double> step_cost;
  int evaluation_episodes = secbad::GridworldExperimentOptions{}.evaluation_episodes;
  double learning_rate = 1e-3;
  bool learn = true;  // false: the planner's table alone, nothing trained
  // runtime: the knob's cost model, and the iterations from a request to
  // its value in force.
  std::string cost_model;
  int lag = 4;
  // runtime: the trained policies' decision margin (KnobPolicySpec).
  double decision_margin = kSecbadDecisionMargin;
  // runtime: how long contexts hold (SecbadRuntimeOptions).
  double segment_mean = kSecbadSegmentMean;
  double segment_stddev = kSecbadSegmentStddev;
};

absl::Status RunSecbadExperiment(const SecbadExperimentOptions& options);

// The runtime environment's shape for a running job whose contexts hold
// for segment_mean +- segment_stddev iterations (a truncated normal, at
// least 20): episodes of four mean segments, a posterior window of two.
// What `secbad runtime` trains in and `secbad live` trains its policy in.
// InvalidArgument, naming the flags, for a mean under 20 iterations or
// over 100000, or a stddev not positive.
absl::StatusOr<secbad::RuntimeExperimentOptions> SecbadRuntimeOptions(double segment_mean,
                                                                      double segment_stddev);

}  // namespace strata::research

#endif  // STRATA_TOOLS_RESEARCH_SECBAD_EXPERIMENTS_H_
