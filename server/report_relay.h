// ReportRelay: the coordinator's relay of a job's iteration reports to its
// controller. Every worker hands in its iterations with its lease requests
// (core/net/knob_messages.h); a process that runs a controller reading every
// process's iterations says it wants them, and each of its lease answers
// carries what the others reported since its previous request. Once anyone
// wants them, every lease answer asks the workers to renew (and report)
// every iteration.
//
//   relay.Add(peer, IterationReportsOf(request));
//   if (BodyOf<wire::knob::Body>(request).getWantsReports()) relay.Want(peer);
//   SetIterationReports(reply, relay.TakeFor(peer));
//
// A process reports only for itself: reports naming another process are
// dropped, as are ones at or before an iteration it already reported (a
// resent request). Each wanting process's queue holds at most
// kMaxReportsPerMessage reports, the oldest dropped first.
//
// Thread safety: not thread-safe; the coordinator's loop owns it.
#ifndef STRATA_SERVER_REPORT_RELAY_H_
#define STRATA_SERVER_REPORT_RELAY_H_

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "core/net/admission.h"
#include "core/net/knob_messages.h"

namespace strata {

class ReportRelay {
 public:
  // The reports `from` sent with a lease request.
  void Add(const Peer& from, const std::vector<IterationReport>& reports);
  // `peer` runs a controller that reads every process's iterations.
  void Want(const Peer& peer);
  bool wanted() const { return !queues_.empty(); }
  // What the others reported since `peer`'s last call (empty for a peer
  // that does not want reports), oldest first.
  std::vector<IterationReport> TakeFor(const Peer& peer);

 private:
  using Key = std::pair<int, int>;  // (role, rank)
  static Key KeyOf(wire::Role role, int rank) { return {static_cast<int>(role), rank}; }

  std::map<Key, int64_t> last_reported_;
  std::map<Key, std::deque<IterationReport>> queues_;  // per wanting process
};

}  // namespace strata

#endif  // STRATA_SERVER_REPORT_RELAY_H_
