// Lane sockets: the connection of a shared-memory lane between a worker and
// a parameter server on the same host and network namespace (see
// core/net/shared_memory_lane.h for the worker's side, server/lane_hub.h
// for the server's).
//
// A lane is a Unix SOCK_SEQPACKET connection in the abstract namespace: one
// Strata header per packet, no data frames (the floats travel in the shared
// memory region), and no ZeroMQ in between, so a request and its reply
// cost one kernel wake-up each. Abstract names are scoped by network
// namespace, like ColocationId(); the address also carries the server's
// ColocationId() so that a worker elsewhere never connects to a stranger
// that happens to use the same name.
//
// Address format: "<ColocationId()>#<abstract name>".
//
// Thread safety: Send may be called from several threads at once (a packet
// is sent whole or not at all); ReceiveNow by one thread at a time.
#ifndef STRATA_CORE_NET_LANE_SOCKET_H_
#define STRATA_CORE_NET_LANE_SOCKET_H_

#include <sys/types.h>
#include <atomic>
#include <cstdint>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/transport.h"

namespace strata {

// The largest packet a lane carries: a header, with room for long error texts.
constexpr size_t kMaxLanePacketBytes = size_t{64} << 10;

class LaneSocket {
 public:
  // Connects to a LaneListener's address. FailedPrecondition when the
  // address belongs to another host or network namespace; Unavailable when
  // nothing listens there; PermissionDenied when a process of another user
  // listens there.
  static absl::StatusOr<std::unique_ptr<LaneSocket>> Connect(const std::string& address);
  ~LaneSocket();
  LaneSocket(const LaneSocket&) = delete;
  LaneSocket& operator=(const LaneSocket&) = delete;

  int fd() const { return fd_; }
  // The user id of the process at the other end (SO_PEERCRED).
  absl::StatusOr<uid_t> PeerUid() const;

  // Sends a header-only message without blocking, with the descriptor it
  // passes (OutgoingMessage::PassDescriptor) if any; returns the bytes
  // sent. InvalidArgument for a message with data frames or over
  // kMaxLanePacketBytes; Unavailable when the peer is gone or its buffer is
  // full (it is not reading).
  absl::StatusOr<size_t> Send(OutgoingMessage& message);
  // The next packet as a one-frame RawMessage (with the descriptor that came
  // with it), without blocking: nullopt when none is queued; Unavailable
  // once the peer has closed; InvalidArgument for a packet over
  // kMaxLanePacketBytes or with several descriptors (discarded, descriptors
  // closed; the lane stays usable).
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow();
  // Waits up to `timeout` until a packet (or the peer's close) is readable.
  bool WaitReadable(absl::Duration timeout) const;
  // Ends the connection both ways without releasing the descriptor, so a
  // thread polling it wakes up and sees the close.
  void Shutdown();

 private:
  friend class LaneListener;
  explicit LaneSocket(int fd);
  const int fd_;
  std::vector<char> buffer_;  // one packet, for ReceiveNow
};

// Whether `address` is a lane on this host and network namespace (else
// Connect fails with FailedPrecondition).
bool LaneIsLocal(const std::string& address);

// The serving end: an abstract-namespace name, and the connections made
// to it.
class LaneListener {
 public:
  // Listens at `name` (at most 100 bytes), or at a fresh name the kernel
  // picks when it is empty. Unavailable when the name is taken.
  static absl::StatusOr<std::unique_ptr<LaneListener>> Listen(const std::string& name = "");
  ~LaneListener();
  LaneListener(const LaneListener&) = delete;
  LaneListener& operator=(const LaneListener&) = delete;

  const std::string& address() const { return address_; }
  int fd() const { return fd_; }
  // A connection that is waiting to be accepted, or nullptr when none is.
  absl::StatusOr<std::unique_ptr<LaneSocket>> Accept();

 private:
  LaneListener(int fd, std::string address) : fd_(fd), address_(std::move(address)) {}
  const int fd_;
  const std::string address_;
};

}  // namespace strata

#endif  // STRATA_CORE_NET_LANE_SOCKET_H_
