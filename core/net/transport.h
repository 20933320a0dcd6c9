// ZeroMQ transport: sockets that send and receive Strata messages.
//
// A message on the wire is multipart: [identity (ROUTER only)] [header]
// [data frame]... The header is a Cap'n Proto `wire::Header`; data frames
// are raw tensor bytes, sent zero-copy (the frame holds a reference to the
// tensor's buffer until ZeroMQ has sent it).
//
// Everything received is untrusted. Receive() returns the raw frames;
// Decode() checks the protocol version, the header's encoding (with Cap'n
// Proto traversal limits), the frame count and sizes against the header,
// and the size limit, and names what was wrong. Kind-specific checks (keys,
// shapes, job ids) belong to the receiver.
//
// Thread safety: a Socket is used by one thread at a time (ZeroMQ's rule).
//
//   auto server = Socket::Bind(ctx, SocketKind::kRouter, "tcp://127.0.0.1:0");
//   auto client = Socket::Connect(ctx, SocketKind::kDealer, (*server)->address());
//   OutgoingMessage m(wire::ps::Kind::PULL);
//   STRATA_RETURN_IF_ERROR((*client)->Send(m));
#ifndef STRATA_CORE_NET_TRANSPORT_H_
#define STRATA_CORE_NET_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/net/connection_security.h"
#include "core/net/message_type.h"
#include "core/net/protocol.capnp.h"
#include "core/net/serving_address.h"
#include "core/tensor/tensor.h"

namespace strata {

struct WireLimits {
  // Largest message (all frames) a receiver accepts; larger ones are refused
  // with an error. ZeroMQ drops single frames above 2x this before they are
  // buffered whole (it disconnects the peer); the frames of a multi-frame
  // message are released as soon as their sum passes the limit, and the
  // message is refused.
  uint64_t max_message_bytes = uint64_t{1} << 30;
  uint64_t traversal_limit_words = uint64_t{1} << 20;  // 8 MiB of header
  size_t max_frames = 65536;
  // Messages queued per peer and direction (ZeroMQ's high-water marks). A
  // full queue never blocks a sender: Send fails at once (IsQueueFull) and
  // nothing is queued; the sender decides whether to retry. A receiver
  // that stops reading fills its queue, then the kernel's buffers, then its
  // senders' queues.
  int queue_messages = 4096;
};

// Bytes counted by a socket, for traffic accounting.
struct TrafficCounters {
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> messages_sent{0};
  std::atomic<uint64_t> messages_received{0};
};

// A file descriptor that came with a message (only a shared-memory lane
// carries one: a worker's memory region, core/net/shm_region.h). Closed
// when the last holder lets it go.
class PassedDescriptor {
 public:
  explicit PassedDescriptor(int fd) : fd_(fd) {}
  ~PassedDescriptor();
  PassedDescriptor(const PassedDescriptor&) = delete;
  PassedDescriptor& operator=(const PassedDescriptor&) = delete;
  int fd() const { return fd_; }

 private:
  const int fd_;
};

class OutgoingMessage {
 public:
  // A header with the protocol version and `type` (service and kind) set.
  explicit OutgoingMessage(MessageType type);
  wire::Header::Builder header() { return header_; }
  // Appends `tensor`'s bytes as a data frame, zero-copy: the buffer stays
  // referenced until ZeroMQ has sent it. Records the size in frameBytes.
  void AddFrame(const Tensor& tensor);
  // Appends a copy of `bytes` as a data frame.
  void AddFrame(std::string bytes);
  // Sends a duplicate of `fd` with the message, which the caller keeps open
  // until the message is sent. Only a lane (core/net/lane_socket.h) carries
  // one; a ZeroMQ socket refuses such a message.
  void PassDescriptor(int fd) { descriptor_ = fd; }
  int passed_descriptor() const { return descriptor_; }  // -1: none
  // The encoded header frame as it would be sent (frameBytes as set by the
  // caller); for tests that craft malformed messages.
  std::string SerializedHeaderForTest();
  // Records each data frame's size in frameBytes and encodes the header.
  kj::Array<capnp::word> EncodeHeader();
  size_t num_frames() const { return frames_.size(); }

 private:
  friend class Socket;
  capnp::MallocMessageBuilder builder_;
  wire::Header::Builder header_;
  struct Frame {
    Tensor tensor;      // zero-copy source, or
    std::string bytes;  // owned copy
  };
  std::vector<Frame> frames_;
  int descriptor_ = -1;
};

// The frames of one received message, undecoded.
struct RawMessage {
  std::string identity;  // the sender (ROUTER sockets only)
  // With CURVE (core/net/curve.h), the ZAP user id of the key that sent it
  // ("jobs=1 name=client"); "" in plain text.
  std::string curve_user;
  std::vector<zmq::message_t> frames;
  // Bytes and frames released unread because the message passed the size or
  // frame limit (Decode refuses it).
  uint64_t dropped_bytes = 0;
  size_t dropped_frames = 0;
  // The descriptor that came with it (lanes only); null when none did.
  std::shared_ptr<const PassedDescriptor> descriptor;
};

// A decoded, structurally checked message.
class IncomingMessage {
 public:
  const std::string& identity() const { return identity_; }
  // RawMessage::curve_user of the message it was decoded from.
  const std::string& curve_user() const { return curve_user_; }
  wire::Header::Reader header() const { return reader_->getRoot<wire::Header>(); }
  size_t num_frames() const { return frames_.size(); }
  // Frame i's bytes, 8-byte aligned (so they may be read as floats).
  const void* frame_data(size_t i) const {
    return aligned_copies_[i] != nullptr ? static_cast<const void*>(aligned_copies_[i].get())
                                         : frames_[i].data();
  }
  size_t frame_size(size_t i) const { return frames_[i].size(); }
  // Copies frame i (whose size must equal dst.nbytes()) into `dst`.
  void CopyFrameTo(size_t i, float* dst) const;
  // The descriptor that came with the message (lanes only), or -1; it
  // stays open while the message lives.
  int descriptor() const { return descriptor_ != nullptr ? descriptor_->fd() : -1; }

 private:
  friend absl::StatusOr<IncomingMessage> Decode(RawMessage raw, const WireLimits& limits);
  std::string identity_;
  std::string curve_user_;
  std::shared_ptr<const PassedDescriptor> descriptor_;
  kj::Array<capnp::word> header_words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  std::vector<zmq::message_t> frames_;  // data frames only
  // ZeroMQ keeps a frame of up to 33 bytes inside its message, at whatever
  // address that has: such a frame is copied here, aligned (null: the frame
  // is aligned as received).
  std::vector<std::unique_ptr<uint64_t[]>> aligned_copies_;
};

// Checks and decodes `raw`. Errors are InvalidArgument (malformed), or
// FailedPrecondition (another protocol major version), or ResourceExhausted
// (over the size limit), each naming the problem.
absl::StatusOr<IncomingMessage> Decode(RawMessage raw, const WireLimits& limits);

// What the header of a raw message says, read without checking the rest
// of the message; nullopt when the header cannot be read.
struct HeaderGlance {
  MessageType type;
  wire::Role sender_role;
  int32_t sender_rank;
  uint64_t request_id;
  int64_t iteration;
};
std::optional<HeaderGlance> PeekHeader(const RawMessage& raw, const WireLimits& limits);

// The request id of a raw message if its header can be read, else 0 (used to
// address an error reply to a message that failed to decode).
uint64_t PeekRequestId(const RawMessage& raw, const WireLimits& limits);

enum class SocketKind { kRouter, kDealer };

class Socket {
 public:
  // Binds a ROUTER (or DEALER) socket where `serving` says
  // (core/net/serving_address.h): the first free port of a range, port 0 any
  // free port. address() then returns the address peers dial (the
  // advertised host with the bound port). Unavailable when no port of the
  // range is free, naming the range. The process's connection security
  // (core/net/connection_security.h) decides how connections prove
  // themselves (open, the job token, CURVE keys): Bind refuses to serve a
  // non-loopback address openly (FailedPrecondition, naming the flags), and
  // a client watches its handshakes, so that a blocking Receive fails at
  // once (PermissionDenied, naming why) when the server refuses the
  // connection (another job token, none, an unlisted key).
  static absl::StatusOr<std::unique_ptr<Socket>> Bind(zmq::context_t& context, SocketKind kind,
                                                      const ServingAddress& serving,
                                                      const WireLimits& limits = {});
  static absl::StatusOr<std::unique_ptr<Socket>> Connect(zmq::context_t& context, SocketKind kind,
                                                         const std::string& address,
                                                         const WireLimits& limits = {});
  ~Socket();

  const std::string& address() const { return address_; }
  const WireLimits& limits() const { return limits_; }
  // Sends `message` (to `identity` on a ROUTER). Never blocks: a full send
  // queue fails with ResourceExhausted naming the peer (IsQueueFull), a
  // ROUTER peer that is gone with Unavailable; either way nothing is queued.
  // InvalidArgument for a message that passes a descriptor.
  absl::Status Send(OutgoingMessage& message, absl::string_view identity = "");
  // Waits up to `timeout` for a message; DeadlineExceeded when none came,
  // PermissionDenied when the server refused this client's connection.
  absl::StatusOr<RawMessage> Receive(absl::Duration timeout);
  // Receives without waiting; Unavailable when nothing is queued.
  absl::StatusOr<RawMessage> ReceiveNow() { return Receive(absl::ZeroDuration()); }

  zmq::socket_t& raw() { return socket_; }
  // Ends the client's handshake watch, for a caller that installs a socket
  // monitor of its own (which would replace it): Receive then no longer
  // fails fast on a refused connection.
  void StopWatchingHandshakes();
  // How this socket's connections prove themselves.
  Mechanism mechanism() const { return mechanism_; }
  // Whether this socket encrypts and authenticates (CURVE).
  bool curve() const { return mechanism_ == Mechanism::kCurve; }
  TrafficCounters& counters() { return counters_; }

 private:
  Socket(zmq::context_t& context, SocketKind kind, const WireLimits& limits);
  absl::StatusOr<RawMessage> ReadMultipart();
  // A client's: watches its handshakes from now on.
  void WatchHandshakes(zmq::context_t& context);
  // The refusal of this client's connection that the handshake watch has
  // seen, if any (OK otherwise, or once a later handshake succeeded).
  absl::Status HandshakeRefusal();

  zmq::socket_t socket_;
  SocketKind kind_;
  WireLimits limits_;
  Mechanism mechanism_ = Mechanism::kOpen;
  std::unique_ptr<zmq::socket_t> handshakes_;  // a client's monitor
  absl::Status refused_;
  // Handshakes in a row that broke off (the peer hung up), and how many
  // make a refusal.
  int broken_handshakes_ = 0;
  static constexpr int kBrokenHandshakesToRefusal = 3;
  std::string address_;
  TrafficCounters counters_;
};

// One event of a socket monitor (zmq_socket_monitor): ZMQ_EVENT_* and its
// value (an errno, a protocol error, a ZAP status code).
struct MonitorEvent {
  uint16_t id = 0;
  int32_t value = 0;
};
// The next event `monitor` (the PAIR socket connected to a monitor's
// endpoint) holds, without waiting; nothing when none is queued.
std::optional<MonitorEvent> NextMonitorEvent(zmq::socket_t& monitor);

// True for the error of a Send whose queue is full (the peer is not reading
// fast enough): sending the same message again later may succeed.
bool IsQueueFull(const absl::Status& status);

// A status carried in an error reply, and back.
// True for an error reply, or an answer that carries an error code.
bool IsRefusal(wire::Header::Reader header);
void FillError(wire::Header::Builder header, const absl::Status& status);
absl::Status ErrorFromHeader(wire::Header::Reader header);

}  // namespace strata

#endif  // STRATA_CORE_NET_TRANSPORT_H_
