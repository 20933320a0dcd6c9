// ChangepointController: the non-learned controller SeCBAD is measured
// against, and the one a job can run without a trained policy
// (scheduler/secbad/context_controller.h says what every controller does):
//
//   1. A run-length posterior (scheduler/secbad/run_length_posterior.h)
//      over the context's observations finds where the context changed;
//      the MAP segment's belief is the context the job runs in now, its
//      noise averaged away over the segment.
//   2. Once the segment has `settle` observations, the value the cost model
//      says is fastest in that context is wanted, when it beats the value
//      in force (or already asked for) by at least `min_gain`.
//
// A change point is reported once, where its segment begins, however often
// the MAP run length falls back to it.
#ifndef STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_
#define STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/secbad/context_controller.h"
#include "scheduler/secbad/run_length_posterior.h"

namespace strata::secbad {

struct ChangepointControllerOptions {
  // The segment prior's mean length in iterations (a constant hazard: how
  // long a context holds is not known in advance).
  double mean_segment_iterations = 100;
  int window = 200;        // run lengths tracked (O(window) per observation)
  int settle = 2;          // observations of a segment before deciding
  double min_gain = 0.05;  // predicted speed-up that warrants a change
  // Observations a proposal may stay out of force before it may be repeated.
  int proposal_patience = 24;
};

class ChangepointController final : public ContextController {
 public:
  // InvalidArgument for options out of range, naming the option.
  static absl::StatusOr<std::unique_ptr<ChangepointController>> Create(
      std::shared_ptr<const KnobContext> context, ChangepointControllerOptions options = {});

  // The MAP segment's context (the observations' units); empty before any
  // observation.
  const std::vector<double>& believed_context() const { return believed_; }
  const RunLengthPosterior& inference() const { return inference_; }

 private:
  ChangepointController(std::shared_ptr<const KnobContext> context,
                        ChangepointControllerOptions options, RunLengthPosterior inference);
  std::optional<std::string> Decide(const ContextObservation& seen, const std::string& current,
                                    const std::string& target) override;

  ChangepointControllerOptions options_;
  RunLengthPosterior inference_;
  std::vector<double> believed_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_
