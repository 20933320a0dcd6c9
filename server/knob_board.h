// KnobBoard: the coordinator's record of one job's runtime knobs
// (core/control/knobs.h) and of the leases that make every process apply a
// change at the same iteration.
//
// The rule: a process may start iteration i only while it holds a lease
// whose end is above i; it asks for a new one ahead of time (RenewLease)
// and each answer carries every change agreed so far. A change requested
// now is scheduled from T = the largest lease end granted to anyone (and
// never before an earlier change): no process can have started iteration
// T, because its lease ends at or before T, and to go on past its lease it
// must renew, and learns the change. So every process switches at T
// without any process stopping for it, as long as leases are renewed in
// time. Leases are granted `lead` iterations ahead: a change takes effect
// within about `lead` iterations of the request.
//
// Thread safety: not thread-safe; the coordinator's loop owns it.
#ifndef STRATA_SERVER_KNOB_BOARD_H_
#define STRATA_SERVER_KNOB_BOARD_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/control/controller.h"
#include "core/control/knobs.h"
#include "core/net/admission.h"

namespace strata {

class KnobBoard {
 public:
  // `catalog` validates requested values and must outlive the board.
  KnobBoard(const KnobCatalog* catalog, int64_t lead);

  struct Lease {
    int64_t until = 0;  // start no iteration >= until without a new lease
    // Every declared knob's start value (kKnobStart), then every change
    // agreed, in order.
    std::vector<KnobChange> changes;
  };
  // `node`, about to start `iteration`, declares the knobs it applies (with
  // their values at start) and gets a lease. InvalidArgument when it
  // declares a knob the catalog does not know, or another start value than
  // the job's first declaration.
  absl::StatusOr<Lease> RenewLease(const Peer& node, int64_t iteration,
                                   const std::map<std::string, std::string>& declared);
  // Validates every proposal (a known knob, declared by the job, a value it
  // accepts) and schedules them all from one iteration, or none: the
  // earliest safe one, or `from_iteration` when given (>= 0) and not
  // earlier than that (FailedPrecondition naming the earliest otherwise).
  absl::StatusOr<std::vector<KnobChange>> Set(const std::vector<KnobProposal>& proposals,
                                              int64_t from_iteration = -1);
  // Every declared knob with its current value (the last change's).
  std::vector<KnobState> Get() const;

 private:
  const KnobCatalog* catalog_;
  int64_t lead_;
  std::map<std::pair<int, int>, int64_t> leases_;  // (role, rank) -> lease end
  int64_t largest_lease_ = 0;
  std::map<std::string, std::string> declared_;  // knob -> value at start
  std::vector<KnobChange> changes_;
};

}  // namespace strata

#endif  // STRATA_SERVER_KNOB_BOARD_H_
