// ChangepointController: the non-learned controller SeCBAD is measured
// against, and the one a job can run without a trained policy. It watches
// one knob (a KnobCostModel's) through a worker's iteration records:
//
//   1. From each record's communication seconds under the value in force,
//      the cost model infers the link rate that explains them.
//   2. A run-length posterior (scheduler/secbad/run_length_posterior.h)
//      over the log of that rate finds where the link changed; the MAP
//      segment's belief is the rate the job runs at now, its noise
//      averaged away over the segment.
//   3. Once the segment has `settle` observations, the value the cost
//      model says is fastest at that rate is proposed, when it beats the
//      value in force (or already asked for) by at least `min_gain`.
//
// A change point is reported once, where its segment begins, however often
// the MAP run length falls back to it. Records that are not completed, the first one seen
// (start-up) and ones that lack the knob are not observations. Change points and proposals are
// logged and kept (events()). Not thread-safe: the StepLoop's thread calls Observe.
#ifndef STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_
#define STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/controller.h"
#include "scheduler/secbad/knob_cost_model.h"
#include "scheduler/secbad/run_length_posterior.h"

namespace strata::secbad {

struct ChangepointControllerOptions {
  // The segment prior's mean length in iterations (a constant hazard: how
  // long a link keeps its rate is not known in advance).
  double mean_segment_iterations = 100;
  // The spread of one observation of ln(rate) within a segment, and how
  // far segments' rates lie from 1 Gbit/s (ln units), for the prior.
  double noise = 0.3;
  double spread = 3.0;
  int window = 200;        // run lengths tracked (O(window) per record)
  int settle = 2;          // observations of a segment before deciding
  double min_gain = 0.05;  // predicted speed-up that warrants a change
  // Iterations a proposal may stay out of force before it may be repeated.
  int proposal_patience = 24;
};

class ChangepointController final : public Controller {
 public:
  // InvalidArgument for options out of range, naming the option.
  static absl::StatusOr<std::unique_ptr<ChangepointController>> Create(
      KnobCostModel model, ChangepointControllerOptions options = {});

  std::vector<KnobProposal> Observe(const IterationRecord& record) override;
  const std::vector<ControllerEvent>& events() const override { return events_; }

  // The MAP segment's link rate (Gbit/s); 0 before any observation.
  double believed_rate_gbit() const { return believed_rate_; }
  const RunLengthPosterior& inference() const { return inference_; }

 private:
  ChangepointController(KnobCostModel model, ChangepointControllerOptions options,
                        RunLengthPosterior inference);
  void Record(int64_t iteration, std::string kind, std::string detail);

  KnobCostModel model_;
  ChangepointControllerOptions options_;
  RunLengthPosterior inference_;
  std::optional<int64_t> first_iteration_;
  bool missing_knob_logged_ = false;
  double believed_rate_ = 0;
  int64_t last_change_start_ = -1;  // the latest change point reported
  std::string pending_;             // proposed, not yet in force
  int64_t pending_since_ = 0;
  std::vector<ControllerEvent> events_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_CHANGEPOINT_CONTROLLER_H_
