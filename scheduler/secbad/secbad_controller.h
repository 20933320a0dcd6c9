// SecbadController: SeCBAD in a running job — a trained KnobPolicy
// (scheduler/secbad/knob_policy.h) chooses the knob's value from the
// belief its tracker holds over the context (the run-length posterior's
// MAP segment) after every observation, moving off the value in force or
// asked for as the policy's KnobDecision says. What every controller does
// besides is
// scheduler/secbad/context_controller.h's. Change points of its posterior
// are reported once each, as the changepoint controller reports them.
#ifndef STRATA_SCHEDULER_SECBAD_SECBAD_CONTROLLER_H_
#define STRATA_SCHEDULER_SECBAD_SECBAD_CONTROLLER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/secbad/context_controller.h"
#include "scheduler/secbad/knob_policy.h"

namespace strata::secbad {

class SecbadController final : public ContextController {
 public:
  // InvalidArgument for an oracle's policy (a live job does not know its
  // true context).
  static absl::StatusOr<std::unique_ptr<SecbadController>> Create(
      std::unique_ptr<KnobPolicy> policy, int proposal_patience = 24);

  const KnobPolicy& policy() const { return *policy_; }

 private:
  SecbadController(std::unique_ptr<KnobPolicy> policy, int proposal_patience);
  std::optional<std::string> Decide(const ContextObservation& seen, const std::string& current,
                                    const std::string& target) override;

  std::unique_ptr<KnobPolicy> policy_;
  std::unique_ptr<ContextTracker> tracker_;
  KnobDecision decision_;
  std::vector<float> state_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_SECBAD_CONTROLLER_H_
