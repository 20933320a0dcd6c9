// RunLengthPosterior: SeCBAD's segment inference (after Adams and MacKay's
// Bayesian online change-point detection). After each observation x_t it
// holds the posterior over the run length G_t, the number of observations
// in the current segment (x_t included), and from it a belief over the
// segment's latent context:
//
//   p(G_t = i)  ∝  p(G_{t-1} = i - 1) · L_i · (1 - H(i - 1))     growth, i >= 2
//   p(G_t = 1)  ∝  Σ_k p(G_{t-1} = k) · H(k) · L_prior            reset
//
// where H is the segment prior's hazard (scheduler/secbad/segment_prior.h),
// L_i the predictive density of x_t given the segment's i - 1 earlier
// observations and L_prior the prior predictive (the observation model,
// scheduler/secbad/observation_model.h).
//
//   RunLengthPosterior inference(prior, std::move(model), /*window=*/200);
//   for (const double* x : observations) {
//     inference.Observe(x);
//     if (inference.change_detected()) ...;      // the MAP run length fell
//     ContextBelief b = inference.MapBelief();   // the MAP segment's own belief
//   }
//
// Truncation: run lengths stop at the window W. Hypothesis W stands for
// "at least W", its context taken from the last W observations, so a step
// costs O(W) whatever the sequence's length (last_step_work counts it).
// W should exceed the segments the prior expects.
//
// Not thread-safe.
#ifndef STRATA_SCHEDULER_SECBAD_RUN_LENGTH_POSTERIOR_H_
#define STRATA_SCHEDULER_SECBAD_RUN_LENGTH_POSTERIOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "scheduler/secbad/observation_model.h"
#include "scheduler/secbad/segment_prior.h"

namespace strata::secbad {

class RunLengthPosterior {
 public:
  // `window` >= 1 (clamped).
  RunLengthPosterior(SegmentPrior prior, std::unique_ptr<ObservationModel> model, int window);

  // Starts a new sequence: no observation yet.
  void Reset();
  // Takes the next observation (model().dims() values).
  void Observe(const double* x);

  // p(G_t = i) at [i - 1], i = 1..W; sums to 1 once something is observed
  // (empty before).
  const std::vector<double>& posterior() const { return posterior_; }
  // argmax_i p(G_t = i); 0 before any observation.
  int map_run_length() const { return map_; }
  // Whether the MAP run length fell at this step: a change point was
  // found, placed map_run_length() - 1 observations back.
  bool change_detected() const { return change_detected_; }
  // P(G_t <= k): how likely the segment began within the last k steps.
  double ProbabilityOfRunAtMost(int k) const;

  // The belief over the context: the mixture over run lengths (its mean
  // and total variance, and the mixture of the grid distributions of a
  // model that has them), and the MAP segment's own.
  ContextBelief MixtureBelief() const;
  ContextBelief MapBelief() const;

  int window() const { return window_; }
  int64_t steps() const { return steps_; }
  // Hypotheses and model slots the last Observe touched.
  int64_t last_step_work() const { return last_step_work_; }
  const ObservationModel& model() const { return *model_; }
  const SegmentPrior& prior() const { return prior_; }

 private:
  SegmentPrior prior_;
  std::unique_ptr<ObservationModel> model_;
  int window_;
  std::vector<double> hazard_;          // H(i) at [i], i = 1..W
  std::vector<double> posterior_;       // p(G_t = i) at [i - 1]
  std::vector<double> next_;            // scratch
  std::vector<double> log_predictive_;  // per model slot, 0..W
  int map_ = 0;
  bool change_detected_ = false;
  int64_t steps_ = 0;
  int64_t last_step_work_ = 0;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_RUN_LENGTH_POSTERIOR_H_
