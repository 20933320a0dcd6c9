// KnobLeaseClient: this process's side of the job's knob board
// (server/knob_board.h), over the coordinator connection of its membership
// client (core/net/membership_client.h).
//
// A lease lets the process start iterations below its end without asking
// again and carries every change agreed so far; a request declares the
// knobs the process applies, and may carry its iterations since the last
// request (the coordinator relays them to a controller of the job that
// reads every process's records; a process whose controller does gets the
// others' with its answers). Proposals (a Controller's) go as KNOB_SET.
//
//   KnobLeaseClient leases(client);            // before the first request
//   leases.Request(iteration, knobs.declared());
//   STRATA_ASSIGN_OR_RETURN(KnobLease lease, leases.Await(iteration, knobs.declared()));
//
// Thread safety: the client's I/O thread hands answers in; every method
// may be called from any thread.
#ifndef STRATA_RUNTIME_KNOB_LEASE_CLIENT_H_
#define STRATA_RUNTIME_KNOB_LEASE_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/control/controller.h"
#include "core/control/iteration_record.h"
#include "core/control/knobs.h"
#include "core/net/membership_client.h"

namespace strata {

struct KnobLease {
  int64_t until = -1;  // -1: none answered yet
  std::vector<KnobChange> changes;
  uint64_t version = 0;  // counts the leases answered
  absl::Status status;   // the coordinator's refusal, if it refused
  // A controller of the job reads every process's iterations: renew the
  // lease, with this process's reports, every iteration.
  bool reports_wanted = false;
};

class KnobLeaseClient {
 public:
  // Takes the coordinator's knob answers from `membership`, which must
  // outlive this object (one per membership client).
  explicit KnobLeaseClient(MembershipClient& membership);
  ~KnobLeaseClient();

  // Asks for a lease from `iteration` on, declaring the knobs this process
  // applies, with this process's iterations since its last request; one
  // that `wants_reports` gets the others' with the answer. Not waiting.
  void Request(int64_t iteration, const std::map<std::string, std::string>& declared,
               const std::vector<IterationRecord>& reports = {}, bool wants_reports = false);
  // The latest lease answered.
  KnobLease lease() const;
  // How many leases have been answered (cheap: no copy, no lock), to tell
  // whether lease() has anything new.
  uint64_t version() const { return version_.load(); }
  // Waits until a lease ends after `iteration` (or is refused), telling the
  // client's wait observer. A request can be lost (a coordinator that
  // restarted): it is sent again every heartbeat period while waiting,
  // declaring `declared`. DeadlineExceeded after the client's timeout.
  absl::StatusOr<KnobLease> Await(int64_t iteration,
                                  const std::map<std::string, std::string>& declared);
  // The other processes' iterations relayed with the leases answered since
  // the last call, oldest first.
  std::vector<IterationRecord> TakeRelayedReports();
  // Asks the coordinator for knob changes (not waiting). A refusal is logged.
  void Propose(const std::vector<KnobProposal>& proposals);

 private:
  // On the client's I/O thread: a message from the coordinator.
  void Take(const IncomingMessage& message);

  MembershipClient& membership_;
  mutable absl::Mutex mu_;
  absl::CondVar answered_;
  KnobLease lease_ ABSL_GUARDED_BY(mu_);
  std::vector<IterationRecord> relayed_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};  // lease_.version, readable without the lock
};

}  // namespace strata

#endif  // STRATA_RUNTIME_KNOB_LEASE_CLIENT_H_
