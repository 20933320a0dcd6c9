// ContextController: what every controller of one knob through a
// KnobContext (scheduler/secbad/knob_context.h) does alike — the changepoint
// controller (changepoint_controller.h) and SeCBAD's learned one
// (secbad_controller.h) differ only in how they decide:
//
//   * each record goes to the context's reader; an observation comes out
//     once an iteration's records are in;
//   * the value in force is the one the controller's own records carry;
//     an iteration under a value the cost model does not know is not
//     decided on (logged once);
//   * Decide (the subclass) names the value it wants in force; when that is
//     neither in force nor already asked for, it is proposed. A proposal
//     that has not come into force after `proposal_patience` observations
//     may be made again (the coordinator may have refused it).
//
// Change points and proposals are kept (events()) and logged. Not
// thread-safe: the StepLoop's thread calls Observe.
#ifndef STRATA_SCHEDULER_SECBAD_CONTEXT_CONTROLLER_H_
#define STRATA_SCHEDULER_SECBAD_CONTEXT_CONTROLLER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/control/controller.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/run_length_posterior.h"

namespace strata::secbad {

class ContextController : public Controller {
 public:
  std::vector<KnobProposal> Observe(const IterationRecord& record) final;
  // The decision on one observation (what Observe does once a record
  // completes one): the value to propose, if any. `seen.in_force` empty:
  // the value the controller's own records carry.
  std::optional<std::string> Consider(const ContextObservation& seen);
  bool reads_every_process() const final { return context_->reads_every_process(); }
  const std::vector<ControllerEvent>& events() const final { return events_; }
  const KnobContext& context() const { return *context_; }
  // Whether events are logged as they are kept (on by default); a
  // simulation that runs thousands of episodes keeps them only.
  void set_logging(bool on) { logging_ = on; }

 protected:
  ContextController(std::shared_ptr<const KnobContext> context, int proposal_patience);
  // An observation under `current` (a value of the context's): the value
  // wanted in force, or nullopt to leave things as they are. `target` is
  // what will be in force once a pending proposal takes effect.
  virtual std::optional<std::string> Decide(const ContextObservation& seen,
                                            const std::string& current,
                                            const std::string& target) = 0;
  // Logs and keeps an event ("change point", "proposal").
  void Record(int64_t iteration, std::string kind, std::string detail);
  // After `posterior` took the observation of `iteration` (under `current`):
  // records a change point where it found one ("`context` since iteration
  // N", `context` the new segment's, "" to leave it out). The MAP run length
  // may fall back to a change it had found and then doubted: that change
  // point is recorded once.
  void RecordChangePoint(const RunLengthPosterior& posterior, int64_t iteration,
                         const std::string& current, const std::string& context);

  const std::shared_ptr<const KnobContext> context_;

 private:
  std::unique_ptr<ContextReader> reader_;
  int proposal_patience_;
  std::string in_force_;  // the knob's value in the latest record of ours
  bool unknown_value_logged_ = false;
  bool logging_ = true;
  int64_t last_change_start_ = -1;  // the latest change point recorded
  std::string pending_;  // proposed, not yet in force
  int64_t pending_since_ = 0;
  std::vector<ControllerEvent> events_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_CONTEXT_CONTROLLER_H_
