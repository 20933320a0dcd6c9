#include "scheduler/secbad/context_controller.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "core/util/log.h"

namespace strata::secbad {

ContextController::ContextController(std::shared_ptr<const KnobContext> context,
                                     int proposal_patience)
    : context_(std::move(context)),
      reader_(context_->NewReader()),
      proposal_patience_(proposal_patience) {}

void ContextController::Record(int64_t iteration, std::string kind, std::string detail) {
  if (logging_) LogInfo("controller: %s after iteration %d: %s", kind, iteration, detail);
  events_.push_back({iteration, std::move(kind), std::move(detail)});
}

void ContextController::RecordChangePoint(const RunLengthPosterior& posterior, int64_t iteration,
                                          const std::string& current,
                                          const std::string& context) {
  const int64_t segment_start = iteration - posterior.map_run_length() + 1;
  if (!posterior.change_detected() || segment_start <= last_change_start_) return;
  last_change_start_ = segment_start;
  Record(iteration, "change point",
         absl::StrFormat("%s%ssince iteration %d (%s=%s in force)", context,
                         context.empty() ? "" : " ", segment_start, context_->knob(), current));
}

std::vector<KnobProposal> ContextController::Observe(const IterationRecord& record) {
  if (const auto own = record.knobs.find(context_->knob()); own != record.knobs.end()) {
    in_force_ = own->second;
  }
  const std::optional<ContextObservation> seen = reader_->Take(record);
  if (!seen.has_value()) return {};
  const std::optional<std::string> proposal = Consider(*seen);
  if (!proposal.has_value()) return {};
  return {{context_->knob(), *proposal}};
}

std::optional<std::string> ContextController::Consider(const ContextObservation& seen) {
  const std::string current = seen.in_force.empty() ? in_force_ : seen.in_force;
  if (context_->IndexOf(current) < 0) {
    if (!unknown_value_logged_) {
      LogWarning(
          "controller: iteration %d runs %s=%s, which the cost model does not know; "
          "such iterations are not observed",
          seen.iteration, context_->knob(), current.empty() ? "(unset)" : current);
      unknown_value_logged_ = true;
    }
    return std::nullopt;
  }
  if (current == pending_) pending_.clear();
  if (!pending_.empty() && seen.iteration - pending_since_ > proposal_patience_) {
    pending_.clear();  // never came into force: the coordinator may have refused it
  }
  const std::string target = pending_.empty() ? current : pending_;
  std::optional<std::string> wanted = Decide(seen, current, target);
  if (!wanted.has_value() || *wanted == target) return std::nullopt;
  pending_ = *wanted;
  pending_since_ = seen.iteration;
  return wanted;
}

}  // namespace strata::secbad
