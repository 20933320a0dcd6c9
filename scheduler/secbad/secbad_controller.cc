#include "scheduler/secbad/secbad_controller.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace strata::secbad {

absl::StatusOr<std::unique_ptr<SecbadController>> SecbadController::Create(
    std::unique_ptr<KnobPolicy> policy, int proposal_patience) {
  if (policy->spec().belief == "oracle") {
    return absl::InvalidArgumentError(
        "the oracle's policy reads the true context, which a running job does not know; "
        "give a policy trained with a belief (secbad)");
  }
  return std::unique_ptr<SecbadController>(
      new SecbadController(std::move(policy), proposal_patience));
}

SecbadController::SecbadController(std::unique_ptr<KnobPolicy> policy, int proposal_patience)
    : ContextController(policy->shared_context(), proposal_patience),
      policy_(std::move(policy)),
      tracker_(policy_->NewTracker()),
      decision_(policy_->spec().decision_margin),
      state_(static_cast<size_t>(policy_->inputs())) {
  tracker_->Reset();
}

std::optional<std::string> SecbadController::Decide(const ContextObservation& seen,
                                                    const std::string& current,
                                                    const std::string& target) {
  policy_->Observe(*tracker_, seen.values, {});
  if (const RunLengthPosterior* posterior = tracker_->posterior(); posterior != nullptr) {
    RecordChangePoint(*posterior, seen.iteration, current, "");
  }
  policy_->WriteState(*tracker_, context_->IndexOf(current), state_.data());
  const int holding = context_->IndexOf(target);
  const std::vector<double> p = policy_->Probabilities(state_.data());
  const int chosen = decision_.Next(p, holding);
  if (chosen == holding) return std::nullopt;
  const std::string& wanted = context_->values()[chosen];
  Record(seen.iteration, "proposal",
         absl::StrFormat("%s=%s (the policy's choice over %s: probability %.2f against %.2f)",
                         context_->knob(), wanted, target, p[chosen], p[holding]));
  return wanted;
}

}  // namespace strata::secbad
