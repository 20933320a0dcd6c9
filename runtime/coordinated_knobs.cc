#include "runtime/coordinated_knobs.h"

#include "core/status.h"

namespace strata {

absl::Status CoordinatedKnobs::Before(int64_t iteration, JobKnobs& knobs, WaitObserver*) {
  // Ask once per lease, half its reach before it ends (the first time at once).
  if (iteration >= renew_at_ && asked_at_ < renew_at_) {
    client_.RequestKnobLease(iteration, knobs.declared());
    asked_at_ = iteration;
  }
  // Most iterations: the lease we hold covers this one and nothing new came.
  if (iteration < until_ && client_.knob_lease_version() == seen_version_) {
    return absl::OkStatus();
  }
  PsClient::KnobLease lease = client_.knob_lease();
  if (lease.until <= iteration) {
    // The client's wait tells the loop's observer itself.
    STRATA_ASSIGN_OR_RETURN(lease, client_.AwaitKnobLease(iteration, knobs.declared()));
  }
  if (lease.version != seen_version_) {
    seen_version_ = lease.version;
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
  client_.ProposeKnobs(proposals);
}

}  // namespace strata
