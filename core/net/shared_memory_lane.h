// SharedMemoryLane: a worker's direct path to one parameter server on the
// same host and network namespace, beside the ZeroMQ socket.
//
// It pairs a shared memory region of slots (core/net/shm_region.h) with a
// lane socket (core/net/lane_socket.h). A push, init or pull of one chunk
// that fits a slot goes here: the calling thread copies the floats into a
// free slot and sends the header itself, and the server answers on the lane
// (a pull's values in the same slot). Waiting callers read the lane
// themselves (Drive), so a small pull costs two kernel wake-ups instead of
// the six thread hand-offs of the socket path; that is what brings a 4 KiB
// pull from ~180 us to well under 100 us.
//
// Contracts:
// * TrySend refuses (false) what the lane cannot carry: other kinds,
//   several chunks, a chunk larger than a slot, all slots or the in-flight
//   budget taken, a closed lane. The caller then uses the socket.
// * Requests in flight when the lane closes (the server died or dropped
//   the lane) are handed to `resend` without their slots, to go over the
//   socket; a push answered before is de-duplicated by the server. A closed
//   lane never reopens (its client may open a new one).
// * A cancelled request's slot stays taken until its reply arrives or the
//   lane closes, so a late pull reply cannot land in a reused slot (a pull
//   the server never answers keeps its slot for the lane's life).
// * Once CancelAll has returned, no reply writes into a caller's tensor.
// * The lane and the socket do not order requests between them: a caller
//   waits for a push before pushing the same key again (ParameterSync does).
// * Thread safety: TrySend, Drive, Drain, CancelAll and Close may be called
//   from any thread; replies are read by one thread at a time, and the
//   channel is driven by one thread at a time (channel_mu_, taken alone or
//   last). Lock order: reader_mu_, then mu_, then the client's queue lock
//   (`resend`) or an Operation's.
#ifndef STRATA_CORE_NET_SHARED_MEMORY_LANE_H_
#define STRATA_CORE_NET_SHARED_MEMORY_LANE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/net/admission.h"
#include "core/net/lane_socket.h"
#include "core/net/message_channel.h"
#include "core/net/ps_request.h"
#include "core/net/shm_region.h"

namespace strata {

struct SharedMemoryLaneOptions {
  int server = 0;
  std::string server_name;   // "server 0 (tcp://...)" in log lines and errors
  std::string lane_address;  // the server's LaneListener address
  RequestSender sender;
  JobCredentials credentials;  // presented in the lane's HELLO
  uint32_t slots = 128;
  uint64_t slot_bytes = 0;
  absl::Duration attach_timeout = absl::Seconds(10);
  WireLimits limits;
  // Stamped with the time of every reply, in nanoseconds of MonotonicNow()
  // (core/util/clock.h): the client's silence clock.
  std::atomic<int64_t>* last_reply_ns = nullptr;
  // Takes requests orphaned by a closed lane (see above); called with the
  // lane's lock held, so it must not call back into the lane.
  std::function<void(std::vector<PsRequest>)> resend;
  // Wraps the lane's channel (core/net/message_channel.h); unset: none.
  ChannelDecorator decorate_channel;
};

class SharedMemoryLane {
 public:
  // Connects to the server's lane, says HELLO on it, and has the server map
  // a fresh region. Fails, naming why, when the server is elsewhere or
  // refuses; the caller then uses the socket only.
  static absl::StatusOr<std::unique_ptr<SharedMemoryLane>> Open(SharedMemoryLaneOptions options);
  ~SharedMemoryLane();

  // Sends `request` on the lane and takes it (true), or leaves it
  // untouched (false; see above).
  bool TrySend(PsRequest& request);
  // Reads replies until `done()` holds, the lane closes, or `deadline` (on
  // the monotonic clock) passes. Returns false at once when another thread is reading them.
  bool Drive(absl::Time deadline, absl::FunctionRef<bool()> done);
  // Reads the replies already there, unless another thread is reading.
  void Drain();
  // Completes every request in flight with Cancelled.
  void CancelAll();
  // Closes the lane; requests in flight go to `resend`.
  void Close(const std::string& why);
  // Closes the lane before the worker tells the server it is done: as
  // Close, but without a log line unless requests were still in flight.
  void Finish();

  uint64_t bytes_sent() const { return bytes_sent_.load(); }
  uint64_t bytes_received() const { return bytes_received_.load(); }

 private:
  struct InFlight {
    PsRequest request;
    bool cancelled = false;
  };
  SharedMemoryLane(SharedMemoryLaneOptions options, std::unique_ptr<MessageChannel> channel,
                   std::unique_ptr<ShmRegion> region);
  absl::Status Attach();
  // With reader_mu_ held: handles every packet queued on the socket.
  void ReadReplies();
  void HandleReply(RawMessage raw);
  void Shut(const std::string& why, bool quiet_when_idle);

  const SharedMemoryLaneOptions options_;
  const std::unique_ptr<MessageChannel> channel_;  // a LaneChannel, maybe decorated
  const std::unique_ptr<ShmRegion> region_;
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> bytes_sent_{0}, bytes_received_{0};

  absl::Mutex reader_mu_;  // held by the thread reading replies
  absl::Mutex channel_mu_;  // held around each Send and ReceiveNow of channel_

  absl::Mutex mu_;
  ShmSlots free_slots_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_SHARED_MEMORY_LANE_H_
