// CoordinatedKnobs: the StepLoop's KnobSchedule over the job's coordinator
// (server/knob_board.h): it renews this process's knob lease half a lead
// ahead, hands each answer's changes to the JobKnobs, and waits at an
// iteration its lease does not cover (normally never: the renewal left in
// time). Proposals go to the coordinator as KNOB_SET. When a controller of
// the job reads every process's records (server/report_relay.h), it renews
// every iteration instead, each request carrying this process's records
// since the last; the controller's own process gets the others' with its
// answers.
#ifndef STRATA_RUNTIME_COORDINATED_KNOBS_H_
#define STRATA_RUNTIME_COORDINATED_KNOBS_H_

#include <cstdint>
#include <vector>

#include "core/control/iteration_record.h"
#include "core/net/membership_client.h"
#include "runtime/knob_lease_client.h"
#include "runtime/step_loop.h"

namespace strata {

class CoordinatedKnobs final : public KnobSchedule {
 public:
  // `membership` must outlive this object; the knob answers of its
  // coordinator connection come here (runtime/knob_lease_client.h).
  explicit CoordinatedKnobs(MembershipClient& membership) : leases_(membership) {}

  // `waits` goes unused: the client reports its own wait for a lease to
  // the observer it was given (the same loop's).
  absl::Status Before(int64_t iteration, JobKnobs& knobs, WaitObserver* waits) override;
  void Propose(const std::vector<KnobProposal>& proposals) override;
  void Report(const IterationRecord& record) override;
  void WantReports() override { wants_reports_ = true; }
  std::vector<IterationRecord> TakeReports() override { return leases_.TakeRelayedReports(); }

 private:
  // Records kept for the next request at most (the oldest dropped first).
  static constexpr size_t kMaxUnsentReports = 64;

  KnobLeaseClient leases_;
  bool wants_reports_ = false;    // our controller reads every process's records
  bool reports_wanted_ = false;   // some controller of the job does (the last lease said)
  std::vector<IterationRecord> unsent_;
  int64_t until_ = -1;         // the lease we hold
  int64_t renew_at_ = 0;       // the iteration at which we ask again
  int64_t asked_at_ = -1;      // the iteration of our last request
  uint64_t seen_version_ = 0;  // the last lease whose changes we took
};

}  // namespace strata

#endif  // STRATA_RUNTIME_COORDINATED_KNOBS_H_
