// ContextTracker: what an agent knows of the latent context, as features
// beside its state: the contenders SeCBAD is measured against differ in
// nothing else (the same environment, PPO and networks).
//
//   kind            features                     knows
//   none            -                            nothing (plain PPO)
//   oracle          the true context             what no agent can
//   whole-history   belief per dim (see below)   one context per episode, from every
//                                                observation since it began (VariBAD-like)
//   segments        belief per dim               the MAP segment's context under a run-length
//                                                posterior (SeCBAD; with a constant-hazard
//                                                prior, the "constant hazard" contender)
//   known segments  belief per dim               the current segment's context from its own
//                                                observations, its start told (what SeCBAD's
//                                                inference would give if it found every change
//                                                at once: its ceiling)
//   revealed after  belief per dim, then the     the known-segments belief until the segment
//   n moves         true context                 has shown n observations, then the truth (what
//                                                knowing the context that soon is worth)
//
// A belief is given per dimension as its mean, as its mean and standard
// deviation, or, from a model with a grid of context values, as the
// probability of every grid value (BeliefFeatures).
//
// Reset at each episode's start, Observe after every step (NaN: a
// dimension not observed, scheduler/secbad/observation_model.h), then
// Features for the next decision. Not thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_CONTEXT_TRACKER_H_
#define STRATA_SCHEDULER_SECBAD_CONTEXT_TRACKER_H_

#include <memory>
#include <string>
#include <vector>

#include "scheduler/secbad/observation_model.h"
#include "scheduler/secbad/run_length_posterior.h"

namespace strata::secbad {

enum class BeliefFeatures {
  kMean,           // the belief's mean per dimension
  kMeanAndSpread,  // its mean, then its standard deviation, per dimension
  // The probability of each of its grid values, per dimension, in grid
  // order (ContextBelief::distribution); none from a model without a grid.
  kDistribution,
};

class ContextTracker {
 public:
  virtual ~ContextTracker() = default;
  virtual int features() const = 0;
  virtual void Reset() = 0;
  // `seen`: the observation (the model's dims); `truth`: the context in
  // force for the next step (only the oracle reads it; null: not known).
  virtual void Observe(const double* seen, const double* truth) = 0;
  virtual void Features(float* out) const = 0;
  // The run-length posterior behind the features, where there is one.
  virtual const RunLengthPosterior* posterior() const { return nullptr; }
};

// Plain PPO: no features.
std::unique_ptr<ContextTracker> NoContext();
// The true context (`dims` values).
std::unique_ptr<ContextTracker> OracleContext(int dims);
// One belief over everything since the episode began, from `model` (its
// slot `episode_steps` holds every observation of an episode).
std::unique_ptr<ContextTracker> WholeHistoryContext(
    std::unique_ptr<ObservationModel> model, int episode_steps,
    BeliefFeatures features = BeliefFeatures::kMeanAndSpread);
// The belief from the observations since the context last changed (the
// truth Observe is given says when); `window` observations at most.
std::unique_ptr<ContextTracker> KnownSegmentsContext(
    std::unique_ptr<ObservationModel> model, int window,
    BeliefFeatures features = BeliefFeatures::kMeanAndSpread);
// The same until the current segment has shown `observations` observations
// (steps where any dimension was seen), then the true context as a belief
// of no spread. Its features are the means (and spreads) only: a
// distribution layout is not taken.
std::unique_ptr<ContextTracker> RevealedContext(std::unique_ptr<ObservationModel> model,
                                                int window, int observations,
                                                BeliefFeatures features);
// The MAP segment's belief under a run-length posterior with `prior` over
// `model`'s slots.
std::unique_ptr<ContextTracker> SegmentContext(
    SegmentPrior prior, std::unique_ptr<ObservationModel> model, int window,
    BeliefFeatures features = BeliefFeatures::kMeanAndSpread);

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_CONTEXT_TRACKER_H_
