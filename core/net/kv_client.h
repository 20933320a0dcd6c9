// KvClient: a worker's key-value client of the parameter servers.
//
// Connect() connects to every server of the cluster map, saying HELLO on
// every connection with the job token and identity (core/net/admission.h):
// a server that refuses us fails Connect with its reason.
// Push, Pull and Init are asynchronous: they split a tensor into the chunks
// of the partition plan, send one request per chunk, and return a Ticket to
// Wait() on.
//
// Threads and sockets (ZeroMQ sockets are not thread-safe): the server
// sockets, the requests in flight and the backlogs belong to whichever
// thread holds socket_mu_. The caller of Push/Pull/Init sends its requests
// itself, and a caller that waits reads the replies itself, blocking in
// poll() on the sockets' file descriptors (ZMQ_FD) between reads, so a
// small pull crosses no thread hand-off. The I/O loop it is served on
// (core/net/client_io_loop.h) owns the connection monitors outright; it
// handles reconnects, sends what other threads queued (a closed lane's
// requests), and reads replies while nobody waits. Whoever reads a reply
// for another thread's ticket completes it and wakes that thread. When the
// connection to a server drops and comes back (the server restarted), the
// requests still waiting on it are sent again, after a new HELLO: the
// restarted server answers them, and pushes are de-duplicated by (worker,
// iteration). A request refused because its connection is not registered
// (a renewed connection it overtook) is sent again behind a HELLO too.
// A request or its answer can also be lost while the connection stays up
// (a bad network; --inject-faults): a request on the socket that has gone
// unanswered while its server has been silent for that server's resend
// timeout (core/net/round_trip.h: adaptive, from the answer times seen,
// doubling with each send up to a quarter of the client's timeout, pulls
// included: a repeated pull that the server is not holding is answered
// with the whole slice again) is sent again. So a server cut off for less
// than the timeout is asked again soon after it can hear (a partition that
// heals is ridden through).
// Silence is measured from the server's last answer of any kind, so a slow
// link that keeps delivering answers is not flooded with copies of what is
// still crossing it. Servers drop a pull that repeats one they hold, answer
// a repeated push without applying it twice, and the client ignores (and
// counts) a second answer. (Requests in flight on a lane that closes go
// again over the socket; a lane is memory on one host and loses nothing.)
//
// With a server on the same host and network namespace, the client also
// opens a shared-memory lane to it (core/net/shared_memory_lane.h): a push,
// init or pull of one chunk that fits a slot then goes there, sent by the
// calling thread, its floats copied once each way through shared memory,
// and its reply read by the thread that waits for it. Everything else goes
// over the socket, and so does everything while a server has no lane: a
// closed lane's requests are resent there, and a new lane is opened once
// the server's connection is back (a restarted server listens at the same
// lane address).
//
// Contracts: a pushed tensor must not change, and a pulled tensor must not
// be read, until its ticket has completed; a key is pushed again only
// after its previous push has completed (a lane and the socket do not
// order requests between them). Wait() fails with
// DeadlineExceeded once the servers have been silent for `timeout`, naming
// the server and the request, so a dead peer never hangs a worker forever
// while a slow link that keeps delivering is waited for.
//
//   KvClient& kv = client->kv();   // of a connected PsClient
//   STRATA_RETURN_IF_ERROR(kv.SetPlan(plan));
//   Ticket t = kv.Push(step, key, param->grad);
//   Ticket u = kv.Pull(step + 1, key, param->value);
//   STRATA_RETURN_IF_ERROR(kv.Wait(t));
#ifndef STRATA_CORE_NET_KV_CLIENT_H_
#define STRATA_CORE_NET_KV_CLIENT_H_

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/net/client_io_loop.h"
#include "core/net/membership.h"
#include "core/net/membership_client.h"
#include "core/net/message_channel.h"
#include "core/net/partition_plan.h"
#include "core/net/ps_client_options.h"
#include "core/net/ps_request.h"
#include "core/net/round_trip.h"
#include "core/net/shared_memory_lane.h"
#include "core/net/transport.h"
#include "core/util/wait_observer.h"

namespace strata {

class KvClient : public ClientIoLoop::Part {
 public:
  // Connects to the servers of `map` (this worker's rank there) and adds
  // their connection monitors and sockets to `loop`, which serves them from
  // its Start. `loop` must outlive the client.
  static absl::StatusOr<std::unique_ptr<KvClient>> Connect(zmq::context_t& context,
                                                           const PsClientOptions& options,
                                                           const ClusterMap& map,
                                                           ClientIoLoop& loop);
  ~KvClient() override;

  int num_servers() const { return static_cast<int>(server_addresses_.size()); }

  // The plan must be set before the first Init/Push/Pull; its server count
  // must match the cluster map.
  absl::Status SetPlan(PartitionPlan plan);
  const PartitionPlan& plan() const { return plan_; }

  Ticket Init(uint32_t key, const Tensor& value);
  Ticket Push(int64_t iteration, uint32_t key, const Tensor& gradient);
  // Fills `destination` with the values at version >= iteration (any
  // initialised version when iteration < 0). The ticket's version() then
  // holds the smallest chunk version received.
  Ticket Pull(int64_t iteration, uint32_t key, const Tensor& destination);
  // Push(iteration, key, gradient) and Pull(iteration + 1, key, destination)
  // with their requests interleaved chunk by chunk: each chunk's pull
  // request follows that chunk's push, so a server answers the first chunk
  // of a large key while the rest of it is still arriving (push and pull of
  // one key overlap on a full-duplex link). The same contracts as Push and
  // Pull apply to each ticket.
  struct Exchange {
    Ticket push, pull;
  };
  Exchange PushThenPull(int64_t iteration, uint32_t key, const Tensor& gradient,
                        const Tensor& destination);

  // Waits for the ticket. Fails with DeadlineExceeded once no server has
  // answered anything for `timeout` (a slow link that keeps delivering
  // replies is waited for; a dead server is not).
  absl::Status Wait(const Ticket& ticket);
  // Waits for every ticket, as Wait does; returns the first error.
  absl::Status WaitAll(const std::vector<Ticket>& tickets);
  // Abandons every queued and in-flight request: their tickets complete
  // with Cancelled and late replies are ignored, so no stale pull can write
  // into a tensor afterwards. Used to rewind after a server restart.
  void CancelAll();
  // Tells every server this worker has finished (closing its lanes first),
  // with what `checkpoints` says of its coordinated checkpoint parts.
  absl::Status Done(const CheckpointReport& checkpoints);
  // Tells every server this worker stops on `why` (LEAVE), so that the
  // workers whose pulls wait for its pushes fail at once naming it and
  // `why`, not after a timeout naming a server. Best effort on the way out:
  // waits at most a short while for the servers' answers.
  void Leave(const absl::Status& why);
  absl::StatusOr<ClockReport> Clocks(int server);

  // Told of every Wait/WaitAll that blocks (null: none). Set before the
  // first wait; called on the waiting thread.
  void set_wait_observer(WaitObserver* observer) { wait_observer_ = observer; }
  // What pushes and pulls made from now on carry on the sockets
  // (core/net/wire_format.h; the wire.format knob): fp32 by default, or
  // bf16. Shared-memory lanes carry fp32 whatever it is. Thread-safe.
  void set_wire_format(wire::DataType type) { wire_format_.store(type); }
  wire::DataType wire_format() const { return wire_format_.load(); }

  // Bytes through shared memory count as sent and received: the traffic
  // accounting compares with a plan that knows no transport.
  uint64_t bytes_sent() const;
  uint64_t bytes_received() const;
  // Requests sent again because they went unanswered (not counting those
  // sent again after a reconnect).
  uint64_t requests_resent() const { return requests_resent_.load(); }
  // Of those, pulls: a pull the server holds for other workers' pushes is
  // asked for again while it waits, and answered once.
  uint64_t pulls_resent() const { return pulls_resent_.load(); }
  // Answers that came to a request already answered, and their bytes: what
  // crossed the link twice because a request was sent again while its first
  // answer was on its way (or because the network repeated one).
  uint64_t answers_repeated() const { return answers_repeated_.load(); }
  uint64_t answer_bytes_repeated() const { return answer_bytes_repeated_.load(); }

  absl::Duration BeforePoll(absl::Span<zmq::pollitem_t> items) override;
  void AfterPoll(absl::Span<const zmq::pollitem_t> items) override;

 private:
  KvClient(const PsClientOptions& options, const ClusterMap& map, ClientIoLoop& loop);
  absl::Status ConnectServers(zmq::context_t& context);
  // Opens a lane to `server` if it offers one on this host, replacing (and
  // closing) the one it had; a failure only logs (that server's data goes
  // over the socket).
  void OpenLane(int server, bool reopening);
  // The lane to `server`, or null. Callers hold the pointer while they use
  // the lane: a reconnect may replace it meanwhile.
  std::shared_ptr<SharedMemoryLane> lane(int server) const;
  std::vector<std::shared_ptr<SharedMemoryLane>> all_lanes() const;
  RequestSender sender() const { return {options_.credentials.job_id, options_.role, rank_}; }
  // HELLO on server `server`'s socket, with socket_mu_ held.
  void SayHello(int server);
  // Sends each request on its server's lane if it can, the rest over the
  // socket; each request's operation has its parts added already.
  void Dispatch(std::vector<PsRequest> requests);
  Ticket Submit(MessageType kind, int64_t iteration, uint32_t key, const Tensor& tensor);
  // One request per chunk of `key` for `op`, in chunk order (op's parts
  // added).
  std::vector<PsRequest> ChunkRequests(MessageType kind, int64_t iteration, uint32_t key,
                                       const Tensor& tensor, const Ticket& op) const;
  // One request like `like` (its kind, iteration, reason, failed
  // checkpoint) to every server.
  Ticket SubmitToAll(const PsRequest& like);
  // Closes every lane; what follows goes over the sockets.
  void FinishLanes();
  // One request without data to one server.
  Ticket SubmitTo(int server, MessageType kind, std::string what);
  // Queues requests for the socket (the I/O loop sends them).
  void Enqueue(std::vector<PsRequest> requests);
  // Sends requests over their sockets from the calling thread.
  void SendNow(std::vector<PsRequest> requests);
  // With socket_mu_ held: sends what `fresh` holds, reads every reply the
  // sockets have and sends what the backlogs hold (after any send, a
  // socket's pending input shows only when read: ZMQ_FD is edge-triggered).
  void ServeSocketsLocked(std::deque<PsRequest> fresh) ABSL_EXCLUSIVE_LOCKS_REQUIRED(socket_mu_);
  // The waiting caller's turn on the sockets: serves them, and unless
  // `ticket` is done, blocks in poll() on their descriptors until one has
  // input, another thread answered a reply, or `until`.
  void DriveSockets(const Ticket& ticket, absl::Time until);
  // Sends a request over its server's socket, or appends it to the
  // server's backlog when the queue is full or a backlog is waiting.
  void SendRequest(PsRequest& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(socket_mu_);
  // Sends what `server`'s backlog holds until its queue is full again.
  void FlushBacklog(int server) ABSL_EXCLUSIVE_LOCKS_REQUIRED(socket_mu_);
  void HandleReply(int server, RawMessage raw) ABSL_EXCLUSIVE_LOCKS_REQUIRED(socket_mu_);
  // Sends again what has waited past its server's resend timeout (see the
  // header comment); looks at most every few milliseconds.
  void ResendOverdueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(socket_mu_);
  void HandleConnectionEvents(int server);
  // Waits until `ticket` completes or no server has answered for `silence`
  // (the client's timeout when unset) since max(started, the last reply);
  // times on the monotonic clock (core/util/clock.h).
  absl::Status WaitWhileAnswered(const Ticket& ticket, absl::Time started,
                                 std::optional<absl::Duration> silence = std::nullopt);
  std::string ServerName(int server) const;
  // What every server channel and lane sent (or received), retired lanes
  // included.
  uint64_t Bytes(bool sent) const;

  const PsClientOptions options_;
  const int rank_;
  const std::vector<std::string> server_addresses_;
  const std::vector<std::string> server_lane_addresses_;  // "" where a server offers none
  ClientIoLoop& loop_;
  WaitObserver* wait_observer_ = nullptr;
  PartitionPlan plan_;

  // The server sockets and what travels on them: whoever holds socket_mu_
  // (lock order: socket_mu_ before queue_mu_). The vector itself and the
  // descriptors are fixed after Connect.
  absl::Mutex socket_mu_;
  std::vector<std::unique_ptr<MessageChannel>> servers_;
  std::vector<int> server_fds_;  // each server channel's wait_fd
  std::map<uint64_t, PsRequest> inflight_ ABSL_GUARDED_BY(socket_mu_);
  // Written when a thread completes replies while callers wait (poll()ed by
  // them); never blocks.
  int replies_event_fd_ = -1;
  std::atomic<int> waiters_{0};  // callers inside DriveSockets
  // Per server: its shared-memory lane, or null (each lane is thread-safe;
  // the I/O loop replaces one after a reconnect). Bytes of lanes replaced
  // so far count in retired_lane_bytes_*.
  mutable absl::Mutex lanes_mu_;
  std::vector<std::shared_ptr<SharedMemoryLane>> lanes_ ABSL_GUARDED_BY(lanes_mu_);
  uint64_t retired_lane_bytes_sent_ ABSL_GUARDED_BY(lanes_mu_) = 0;
  uint64_t retired_lane_bytes_received_ ABSL_GUARDED_BY(lanes_mu_) = 0;
  // Per server (the I/O loop's): ZeroMQ's connection events.
  std::vector<std::unique_ptr<zmq::socket_t>> monitors_;
  // Per server: whether the connection was lost since it was last up.
  std::vector<bool> disconnected_ ABSL_GUARDED_BY(socket_mu_);
  // Per server: ids of in-flight requests its full send queue refused, in
  // order; sent again as soon as the socket takes messages.
  std::vector<std::deque<uint64_t>> backlog_ ABSL_GUARDED_BY(socket_mu_);
  bool backlogged_ = false;  // the I/O loop's: some backlog held requests after its turn
  // Per server: its answer times, and when it last answered anything.
  std::vector<RoundTrip> round_trips_ ABSL_GUARDED_BY(socket_mu_);
  std::vector<absl::Time> last_answer_ ABSL_GUARDED_BY(socket_mu_);
  absl::Time next_resend_check_ ABSL_GUARDED_BY(socket_mu_);
  std::atomic<uint64_t> requests_resent_{0};
  std::atomic<uint64_t> pulls_resent_{0};
  std::atomic<uint64_t> answers_repeated_{0};
  std::atomic<uint64_t> answer_bytes_repeated_{0};
  std::atomic<wire::DataType> wire_format_{wire::DataType::F32};
  std::atomic<int64_t> last_reply_ns_{0};  // any server's, read by waiting callers

  absl::Mutex queue_mu_;
  std::deque<PsRequest> queue_ ABSL_GUARDED_BY(queue_mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(queue_mu_) = 1;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_KV_CLIENT_H_
