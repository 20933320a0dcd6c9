#include "runtime/coordinated_knobs.h"

#include "core/status.h"

namespace strata {

absl::Status CoordinatedKnobs::Before(int64_t iteration, JobKnobs& knobs, WaitObserver*) {
  // Ask once per lease, half its reach before it ends (the first time at
  // once); every iteration while records are relayed.
  const bool every_iteration = wants_reports_ || reports_wanted_;
  if ((iteration >= renew_at_ && asked_at_ < renew_at_) ||
      (every_iteration && asked_at_ < iteration)) {
    leases_.Request(iteration, knobs.declared(), unsent_, wants_reports_);
    unsent_.clear();
    asked_at_ = iteration;
  }
  // Most iterations: the lease we hold covers this one and nothing new came.
  if (iteration < until_ && leases_.version() == seen_version_) {
    return absl::OkStatus();
  }
  KnobLease lease = leases_.lease();
  if (lease.until <= iteration) {
    // The lease client's wait tells the loop's observer itself.
    STRATA_ASSIGN_OR_RETURN(lease, leases_.Await(iteration, knobs.declared()));
  }
  if (lease.version != seen_version_) {
    seen_version_ = lease.version;
    reports_wanted_ = lease.reports_wanted;
    knobs.Schedule(lease.changes);
    if (lease.until > until_) {
      // Renew when half of what this lease added ahead of us is left.
      renew_at_ = iteration + (lease.until - iteration + 1) / 2;
      until_ = lease.until;
    }
  }
  return absl::OkStatus();
}

void CoordinatedKnobs::Propose(const std::vector<KnobProposal>& proposals) {
  leases_.Propose(proposals);
}

void CoordinatedKnobs::Report(const IterationRecord& record) {
  if (!wants_reports_ && !reports_wanted_) return;  // nobody reads them
  unsent_.push_back(record);
  if (unsent_.size() > kMaxUnsentReports) unsent_.erase(unsent_.begin());
}

}  // namespace strata
