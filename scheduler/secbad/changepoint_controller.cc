#include "scheduler/secbad/changepoint_controller.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata::secbad {

absl::StatusOr<std::unique_ptr<ChangepointController>> ChangepointController::Create(
    KnobCostModel model, ChangepointControllerOptions options) {
  if (!(options.mean_segment_iterations >= 1)) {
    return absl::InvalidArgumentError(
        "changepoint controller: mean_segment_iterations must be >= 1");
  }
  if (!(options.noise > 0) || !(options.spread > 0)) {
    return absl::InvalidArgumentError("changepoint controller: noise and spread must be > 0");
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
  STRATA_ASSIGN_OR_RETURN(
      NormalGammaModel observations,
      NormalGammaModel::Create({NormalGammaPrior::For(0.0, options.noise, options.spread)}));
  RunLengthPosterior inference(std::move(prior),
                               std::make_unique<NormalGammaModel>(std::move(observations)),
                               options.window);
  return std::unique_ptr<ChangepointController>(
      new ChangepointController(std::move(model), options, std::move(inference)));
}

ChangepointController::ChangepointController(KnobCostModel model,
                                             ChangepointControllerOptions options,
                                             RunLengthPosterior inference)
    : model_(std::move(model)), options_(options), inference_(std::move(inference)) {}

void ChangepointController::Record(int64_t iteration, std::string kind, std::string detail) {
  LogInfo("controller: %s after iteration %d: %s", kind, iteration, detail);
  events_.push_back({iteration, std::move(kind), std::move(detail)});
}

std::vector<KnobProposal> ChangepointController::Observe(const IterationRecord& record) {
  if (!record.completed) return {};
  if (!first_iteration_.has_value()) {
    first_iteration_ = record.iteration;  // start-up: connections, first pulls
    return {};
  }
  const auto in_force = record.knobs.find(model_.knob());
  if (in_force == record.knobs.end() || !model_.Knows(in_force->second)) {
    if (!missing_knob_logged_) {
      LogWarning(
          "controller: iteration %d runs %s=%s, which the cost model does not know; "
          "such iterations are not observed",
          record.iteration, model_.knob(),
          in_force == record.knobs.end() ? "(unset)" : in_force->second);
      missing_knob_logged_ = true;
    }
    return {};
  }
  const std::string& current = in_force->second;
  if (current == pending_) pending_.clear();

  const double rate = model_.InferRate(current, record.communication_seconds);
  const double observation = std::log(rate);
  inference_.Observe(&observation);
  const int run = inference_.map_run_length();
  believed_rate_ = std::exp(inference_.MapBelief().mean[0]);
  // The MAP run length may fall back to a change it had found and then
  // doubted: that is the same change point, reported once.
  const int64_t segment_start = record.iteration - run + 1;
  if (inference_.change_detected() && segment_start > last_change_start_) {
    last_change_start_ = segment_start;
    Record(record.iteration, "change point",
           absl::StrFormat("link about %.3g Gbit/s since iteration %d (%s=%s in force)",
                           believed_rate_, segment_start, model_.knob(), current));
  }
  if (run < options_.settle) return {};

  if (!pending_.empty() && record.iteration - pending_since_ > options_.proposal_patience) {
    pending_.clear();  // never came into force: the coordinator may have refused it
  }
  const std::string target = pending_.empty() ? current : pending_;
  const std::string best = model_.Best(believed_rate_);
  if (best == target) return {};
  const double gain = model_.IterationSeconds(target, believed_rate_) /
                          model_.IterationSeconds(best, believed_rate_) -
                      1;
  if (gain < options_.min_gain) return {};
  pending_ = best;
  pending_since_ = record.iteration;
  Record(record.iteration, "proposal",
         absl::StrFormat("%s=%s (predicted %.0f%% faster than %s at %.3g Gbit/s)", model_.knob(),
                         best, 100 * gain, target, believed_rate_));
  return {{model_.knob(), best}};
}

}  // namespace strata::secbad
