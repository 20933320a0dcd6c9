#include "scheduler/secbad/changepoint_controller.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "core/status.h"

namespace strata::secbad {

absl::StatusOr<std::unique_ptr<ChangepointController>> ChangepointController::Create(
    std::shared_ptr<const KnobContext> context, ChangepointControllerOptions options) {
  if (!(options.mean_segment_iterations >= 1)) {
    return absl::InvalidArgumentError(
        "changepoint controller: mean_segment_iterations must be >= 1");
  }
  if (options.window < 2 || options.settle < 1 || options.settle > options.window) {
    return absl::InvalidArgumentError(
        "changepoint controller: window must be >= 2 and settle within 1..window");
  }
  if (!(options.min_gain >= 0) || options.proposal_patience < 1) {
    return absl::InvalidArgumentError(
        "changepoint controller: min_gain must be >= 0 and proposal_patience >= 1");
  }
  STRATA_ASSIGN_OR_RETURN(SegmentPrior prior,
                          SegmentPrior::ConstantHazard(1.0 / options.mean_segment_iterations));
  STRATA_ASSIGN_OR_RETURN(NormalGammaModel observations,
                          NormalGammaModel::Create(context->Priors(), context->outliers()));
  RunLengthPosterior inference(std::move(prior),
                               std::make_unique<NormalGammaModel>(std::move(observations)),
                               options.window);
  return std::unique_ptr<ChangepointController>(
      new ChangepointController(std::move(context), options, std::move(inference)));
}

ChangepointController::ChangepointController(std::shared_ptr<const KnobContext> context,
                                             ChangepointControllerOptions options,
                                             RunLengthPosterior inference)
    : ContextController(std::move(context), options.proposal_patience),
      options_(options),
      inference_(std::move(inference)) {}

std::optional<std::string> ChangepointController::Decide(const ContextObservation& seen,
                                                         const std::string& current,
                                                         const std::string& target) {
  inference_.Observe(seen.values.data());
  const int run = inference_.map_run_length();
  believed_ = inference_.MapBelief().mean;
  RecordChangePoint(inference_, seen.iteration, current, context_->Describe(believed_));
  if (run < options_.settle) return std::nullopt;
  const std::string best = context_->Best(believed_);
  if (best == target) return std::nullopt;
  const double gain =
      context_->IterationSeconds(target, believed_) / context_->IterationSeconds(best, believed_) -
      1;
  if (gain < options_.min_gain) return std::nullopt;
  Record(seen.iteration, "proposal",
         absl::StrFormat("%s=%s (predicted %.0f%% faster than %s; %s)", context_->knob(), best,
                         100 * gain, target, context_->Describe(believed_)));
  return best;
}

}  // namespace strata::secbad
