// RuntimeEnvironment: a running job as SeCBAD's knob policies are trained
// and measured in — the iteration seconds of each value of a knob, from
// its KnobContext's cost model (scheduler/secbad/knob_context.h, fitted to
// the StepLoop's recorded iterations), in a context that follows a
// piecewise-stable trace: segment lengths from a truncated-normal prior,
// each segment's context drawn by the KnobContext (a link's rate; which
// conv worker straggles and how much). What a controller sees after each
// iteration is that iteration's reading of the context (the context plus
// the KnobContext's observation noise). A value asked for comes into
// force `lag` iterations later, as the coordinator's lease makes it.
//
// The reward of an iteration is its efficiency, T_best / T_in_force in the
// true context: 1 when the value in force is the fastest there. The
// iteration at which a new value takes force also pays for the change
// (`change_cost` iterations more: a job makes kernels for its new batch
// sizes, its loaders remake the batches made ahead), so a policy learns not
// to change for a noisy reading.
//
//   RuntimeEnvironment env(context, options, seed);
//   env.Reset();
//   for (bool done = false; !done;) {
//     RuntimeEnvironment::Outcome o = env.Step(wanted_index);
//     ... o.efficiency, o.seen ...
//   }
//
// Deterministic for a seed: the traces depend on the seed alone, not on
// what is asked for. Not thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_RUNTIME_ENVIRONMENT_H_
#define STRATA_SCHEDULER_SECBAD_RUNTIME_ENVIRONMENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/util/rng.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/knob_policy.h"
#include "scheduler/secbad/ppo.h"
#include "scheduler/secbad/segment_prior.h"

namespace strata::secbad {

struct RuntimeEnvironmentOptions {
  int episode_iterations = 400;
  int lag = 3;  // iterations from a request to its value in force
  double change_cost = 1.0;  // extra iterations' seconds a change costs
  // Segment lengths in iterations: max(round(N(mean, stddev)), min).
  double segment_mean = 100;
  double segment_stddev = 25;
  int segment_min = 10;
};

class RuntimeEnvironment {
 public:
  // InvalidArgument for options out of range.
  static absl::StatusOr<std::unique_ptr<RuntimeEnvironment>> Create(
      std::shared_ptr<const KnobContext> context, const RuntimeEnvironmentOptions& options,
      uint64_t seed);

  // A new episode: a new trace, a value drawn at random in force.
  void Reset();
  struct Outcome {
    double efficiency = 0;        // T_best / T_in_force this iteration
    double seconds = 0;           // T_in_force
    std::vector<double> seen;     // this iteration's reading of the context
    bool done = false;            // the episode's last iteration
  };
  // One iteration; `wanted` (an index into the context's values) is the
  // value the controller wants in force.
  Outcome Step(int wanted);

  // The context of the next iteration.
  const std::vector<double>& context() const { return context_; }
  int in_force() const { return in_force_; }
  // The value asked for last (in force, or coming into force).
  int requested() const { return requested_; }
  // How many times a new value was asked for this episode.
  int requests() const { return requests_; }
  int iteration() const { return iteration_; }
  // The iterations at which each segment after the first began, this episode.
  const std::vector<int>& changes() const { return changes_; }
  const KnobContext& knob_context() const { return *knob_; }

 private:
  RuntimeEnvironment(std::shared_ptr<const KnobContext> context,
                     const RuntimeEnvironmentOptions& options, SegmentPrior segments,
                     uint64_t seed);
  void NewSegment();

  std::shared_ptr<const KnobContext> knob_;
  OutlierModel outliers_;  // the knob's, read once: Step is the training's inner loop
  RuntimeEnvironmentOptions options_;
  SegmentPrior segments_;
  // The trace and the readings' noise draw from streams of their own, so
  // every controller meets the same contexts at the same iterations.
  Rng trace_rng_, noise_rng_;
  std::vector<double> context_;
  // The readings' noise in context_ under each value, read once a segment.
  std::vector<double> noise_;
  int iteration_ = 0;
  int segment_end_ = 0;
  int in_force_ = 0;
  int requested_ = 0;
  int requests_ = 0;
  std::map<int, int> scheduled_;  // iteration -> value index coming into force
  std::vector<int> changes_;
};

// SeCBAD and its baselines on one harness: each learned contender (a
// KnobPolicy belief: secbad, constant-hazard, whole-history, plain,
// oracle) is trained with PPO in the environment and then run greedily
// (moving as its KnobDecision says) on evaluation episodes it was not
// trained on; "changepoint" (the
// change-point controller, nothing learned) runs on the same episodes.
// The score is the mean efficiency over the evaluation iterations.
struct RuntimeExperimentOptions {
  RuntimeEnvironmentOptions env;
  KnobPolicySpec policy;  // its belief is the contender's
  int64_t training_steps = 1'000'000;
  int envs = 16;  // episodes per PPO update
  int evaluation_episodes = 50;
  PpoOptions ppo;
  std::string policy_out;  // "" = none; else the trained policy goes here
  // Called after each PPO update with the steps done and the mean training
  // efficiency; false stops the training (Run returns Cancelled).
  std::function<bool(int64_t, double)> progress;
};

// Every contender, in the order reports list them.
const std::vector<std::string>& RuntimeContenders();

struct RuntimeRun {
  double efficiency = 0;      // mean over the evaluation iterations
  double requests_per_1000 = 0;  // new values asked for per 1000 evaluation iterations
  std::vector<double> curve;  // mean training efficiency per update
};

class RuntimeExperiment {
 public:
  RuntimeExperiment(std::shared_ptr<const KnobContext> context, RuntimeExperimentOptions options);
  // InvalidArgument for an unknown contender, naming the known ones.
  absl::StatusOr<RuntimeRun> Run(const std::string& contender, uint64_t seed);

 private:
  absl::StatusOr<RuntimeRun> RunLearned(const std::string& belief, uint64_t seed);
  absl::StatusOr<RuntimeRun> RunChangepoint(uint64_t seed);

  std::shared_ptr<const KnobContext> context_;
  RuntimeExperimentOptions options_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_RUNTIME_ENVIRONMENT_H_
