// KnobPolicy: a learned policy that chooses a runtime knob's value from
// what a ContextTracker (scheduler/secbad/context_tracker.h) believes of
// the job's context — SeCBAD's policy on the belief-augmented state, for a
// knob seen through a KnobContext (scheduler/secbad/knob_context.h).
//
//   state   the tracker's features over observations centred on the
//           context's prior means (SeCBAD: the MAP segment's belief, mean
//           and standard deviation per dimension), then a one-hot of the
//           value in force
//   action  the index (in context.values()) of the value wanted in force
//
// The runtime environment (runtime_environment.h) trains it with PPO; the
// SeCBAD controller (secbad_controller.h) runs it greedily in a live job.
// A policy file (ActorCritic's) says what it is for: the knob, its values,
// the context's kind and dimensions, the belief and segment prior it was
// trained with; Load refuses one made for another knob, values or context,
// naming what differs.
//
// Not thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_KNOB_POLICY_H_
#define STRATA_SCHEDULER_SECBAD_KNOB_POLICY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/secbad/actor_critic.h"
#include "scheduler/secbad/context_tracker.h"
#include "scheduler/secbad/knob_context.h"

namespace strata::secbad {

// The widest decision margin a policy may have (KnobPolicySpec).
inline constexpr double kMaxDecisionMargin = 10;

struct KnobPolicySpec {
  // The tracker: "secbad" (segments under the truncated-normal prior
  // below), "constant-hazard" (segments, a constant hazard of the same
  // mean), "whole-history" (one belief per episode), "plain" (none),
  // "oracle" (the true context).
  std::string belief = "secbad";
  double segment_mean = 100;  // iterations
  double segment_stddev = 25;
  int segment_min = 10;
  int window = 200;              // run lengths the posterior keeps
  int episode_iterations = 400;  // the whole history's reach
  int hidden = 64;
  // How far another value must lead the one held before the policy asks
  // for it (KnobDecision below): in [0, kMaxDecisionMargin]; 0 for the
  // likeliest action always, above 1 even a sure preference waits for a
  // second observation. Not used in training; saved with the policy, so a
  // live job decides as the policy's evaluation did.
  double decision_margin = 0;
};

// Every belief a policy can be trained with, in the order reports list them.
const std::vector<std::string>& KnobPolicyBeliefs();

// How a greedy policy moves off the value it holds (in force or asked
// for): to another value once that value has been the policy's likeliest
// on consecutive observations by leads (its probability minus the held
// value's) that add up to the margin. A clear preference moves at once;
// a slight one that persists moves after a few observations; one that
// comes and goes, as between two values about as fast, never adds up.
// Margin 0: always the likeliest.
class KnobDecision {
 public:
  explicit KnobDecision(double margin) : margin_(margin) {}
  // The value to hold after the policy's probabilities `p` (one per
  // value), holding `held` (-1: none, then the likeliest).
  int Next(const std::vector<double>& p, int held);
  void Reset();

 private:
  double margin_;
  int candidate_ = -1;  // the value leading the held one, if any
  double lead_ = 0;     // its leads added up
};

class KnobPolicy {
 public:
  // A policy with fresh networks. InvalidArgument for an unknown belief
  // (naming the known ones), a segment prior out of range or observation
  // priors the context gives wrong.
  static absl::StatusOr<std::unique_ptr<KnobPolicy>> Create(
      std::shared_ptr<const KnobContext> context, const KnobPolicySpec& spec, uint64_t seed);
  // The policy in `path`, for `context`'s knob (see above).
  static absl::StatusOr<std::unique_ptr<KnobPolicy>> Load(
      const std::string& path, std::shared_ptr<const KnobContext> context);
  absl::Status Save(const std::string& path) const;

  // A tracker of this policy's belief (Reset before use).
  std::unique_ptr<ContextTracker> NewTracker() const;
  // Gives `tracker` an observation (and the true context, which only the
  // oracle reads), both centred as the state wants them.
  void Observe(ContextTracker& tracker, const std::vector<double>& seen,
               const std::vector<double>& truth) const;
  int inputs() const;
  // The state: `tracker`'s features, then the one-hot of `in_force`.
  void WriteState(const ContextTracker& tracker, int in_force, float* out) const;
  // The policy's probability of each action in `state` (inputs() floats).
  std::vector<double> Probabilities(const float* state);
  // The most likely action in `state`.
  int Choose(const float* state);

  ActorCritic& net() { return *net_; }
  const KnobPolicySpec& spec() const { return spec_; }
  const KnobContext& context() const { return *context_; }
  const std::shared_ptr<const KnobContext>& shared_context() const { return context_; }
  // The segment prior of the spec (a constant hazard for that belief).
  absl::StatusOr<SegmentPrior> Segments() const;

 private:
  KnobPolicy(std::shared_ptr<const KnobContext> context, KnobPolicySpec spec,
             std::unique_ptr<ActorCritic> net);
  // What a policy file says about the knob and context (checked on Load).
  nlohmann::json AboutTheKnob() const;
  // The context's observation priors, each centred on 0 (the state's
  // observations are centred on the priors' means).
  std::vector<NormalGammaPrior> CentredPriors() const;
  // The context's outliers, their ranges centred likewise.
  OutlierModel CentredOutliers() const;

  std::shared_ptr<const KnobContext> context_;
  KnobPolicySpec spec_;
  std::vector<double> prior_means_;
  std::unique_ptr<ActorCritic> net_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_KNOB_POLICY_H_
