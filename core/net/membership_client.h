// MembershipClient: a worker's place in the job, kept through its
// connection to the coordinator (server rank 0).
//
// Join() says HELLO and REGISTER (core/net/membership.h) and waits for the
// cluster map: this worker's rank, every server's address and lane, every
// FC worker's addresses, and the checkpoint epoch to restore. It registers
// again every heartbeat period until the map comes (a coordinator that
// restarted, or a lost HELLO, is ridden through), and fails with the
// coordinator's refusal, or with DeadlineExceeded after the timeout.
//
// Once added to a ClientIoLoop the loop owns the coordinator socket: it
// sends a heartbeat every period carrying the checkpoint parts reported
// here, registers again when a restarted coordinator says it has forgotten
// us, sends what other threads queued with SendToCoordinator, and hands
// every other message from the coordinator to the listener (the knob lease
// client, runtime/knob_lease_client.h). The rest may be called from any
// thread, except set_wait_observer (before the first wait).
#ifndef STRATA_CORE_NET_MEMBERSHIP_CLIENT_H_
#define STRATA_CORE_NET_MEMBERSHIP_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/net/client_io_loop.h"
#include "core/net/membership.h"
#include "core/net/ps_client_options.h"
#include "core/net/transport.h"
#include "core/util/wait_observer.h"

namespace strata {

// What the coordinator's map tells a worker.
struct ClusterMap {
  int rank = -1;  // this worker's
  int num_workers = 0;  // conv workers
  int num_fc_workers = 0;
  std::vector<std::string> server_addresses;
  std::vector<std::string> server_lane_addresses;  // "" where a server offers none
  std::vector<std::string> fc_addresses;           // FC workers' by rank (stanza mode)
  std::vector<std::string> fc_peer_addresses;      // their expert exchanges, by rank
  int64_t checkpoint_epoch = -1;  // the epoch every restoring process loads; -1: none
};

class MembershipClient : public ClientIoLoop::Part {
 public:
  static absl::StatusOr<std::unique_ptr<MembershipClient>> Join(zmq::context_t& context,
                                                                const PsClientOptions& options);

  const ClusterMap& map() const { return map_; }
  int rank() const { return map_.rank; }
  const PsClientOptions& options() const { return options_; }

  // Adds the coordinator socket to `loop`, which serves it from its Start.
  void ServeOn(ClientIoLoop& loop);

  // A message of `kind` from us, its header filled; SendToCoordinator
  // queues it for the loop, which sends it.
  std::unique_ptr<OutgoingMessage> ToCoordinator(MessageType kind, uint64_t request_id,
                                                 int64_t iteration) const;
  void SendToCoordinator(std::unique_ptr<OutgoingMessage> message);
  // Called on the loop's thread with every message from the coordinator
  // that membership does not consume itself (answers to what was sent
  // through SendToCoordinator; refusals, which are logged first). One
  // listener at a time; null removes it, after any call in progress has
  // returned.
  using CoordinatorListener = std::function<void(const IncomingMessage&)>;
  void set_coordinator_listener(CoordinatorListener listener);

  // The newest coordinated checkpoint part this process has written; the
  // heartbeats (and, at the end, DONE) tell the coordinator, which
  // completes an epoch once every part is in
  // (core/train/checkpoint_epochs.h).
  void ReportCheckpointed(int64_t iteration) { checkpointed_.store(iteration); }
  // A part this process could not write: the heartbeats tell the
  // coordinator, which reports that the epoch will not be complete.
  void ReportCheckpointFailure(int64_t iteration, const std::string& why);
  // What the heartbeats say now.
  CheckpointReport checkpoint_report() const;

  // The observer that whoever waits for the coordinator's answers (the knob
  // lease client) tells of its waits (null: none); set before the first.
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }
  WaitObserver* wait_observer() const { return wait_observer_; }

  uint64_t bytes_sent() const { return coordinator_->counters().bytes_sent; }
  uint64_t bytes_received() const { return coordinator_->counters().bytes_received; }

  absl::Duration BeforePoll(absl::Span<zmq::pollitem_t> items) override;
  void AfterPoll(absl::Span<const zmq::pollitem_t> items) override;

 private:
  explicit MembershipClient(const PsClientOptions& options) : options_(options) {}
  absl::Status Register(zmq::context_t& context);
  absl::Status SendRegistration();
  // True when the coordinator says it has forgotten us.
  bool HandleCoordinatorMessage(RawMessage raw);
  void SendHeartbeat();

  const PsClientOptions options_;
  ClusterMap map_;  // fixed once Join returns
  WaitObserver* wait_observer_ = nullptr;
  ClientIoLoop* loop_ = nullptr;

  // The loop's once it is served (ServeOn), the joining thread's before.
  std::unique_ptr<Socket> coordinator_;
  absl::Time last_registration_;
  absl::Time next_heartbeat_;

  std::atomic<int64_t> checkpointed_{-1};
  mutable absl::Mutex failure_mu_;
  CheckpointReport failure_ ABSL_GUARDED_BY(failure_mu_);  // failed, why: the latest

  absl::Mutex outbox_mu_;
  std::deque<std::unique_ptr<OutgoingMessage>> outbox_ ABSL_GUARDED_BY(outbox_mu_);

  absl::Mutex listener_mu_;
  CoordinatorListener listener_ ABSL_GUARDED_BY(listener_mu_);
};

}  // namespace strata

#endif  // STRATA_CORE_NET_MEMBERSHIP_CLIENT_H_
