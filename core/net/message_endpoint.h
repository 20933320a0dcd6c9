// MessageEndpoint: the transport seam of a serving end. One address that
// many peers send whole protocol messages to; each RawMessage it delivers
// carries its sender's identity, and a reply names that identity. The
// ZeroMQ ROUTER socket of a server, an FC worker or an expert-exchange
// inbox (ZmqEndpoint, below) and a server's shared-memory lanes
// (server/lane_hub.h) implement it, so whatever sits on it (counting,
// tracing, the fault injection of the reliability work: drop, duplicate,
// delay, reorder) sees every message a serving process receives or sends on
// either path. It is the serving twin of MessageChannel
// (core/net/message_channel.h), which carries one client connection.
//
// Identities: each kind of endpoint delivers identities of its own, marked
// by their first byte (EndpointKind), which the endpoint sets and no peer
// can: a ZeroMQ peer chooses its routing id freely ("\0lane:1" included),
// so a routing id is only ever the rest of a ZeroMQ identity, and no peer
// of one transport can pass for a peer of another.
//
// Contract: Send never blocks; an endpoint is driven by one thread (its
// owner's event loop). Polling is split in two so that one poll waits on
// every endpoint of a process: AddPollItems appends this endpoint's items,
// and after the poll Collect reads what they reported, starting at the
// first item AddPollItems appended. PollEndpoints does both for a set.
#ifndef STRATA_CORE_NET_MESSAGE_ENDPOINT_H_
#define STRATA_CORE_NET_MESSAGE_ENDPOINT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/net/transport.h"

namespace strata {

// The first byte of every identity an endpoint of that kind delivers.
enum class EndpointKind : char {
  kZeroMq = 'z',  // a ROUTER socket's peer: the routing id follows
  kLane = 'l',    // a shared-memory lane (server/lane_hub.h)
};
// `local` (a routing id, a lane's name) as an identity of `kind`.
std::string EndpointIdentity(EndpointKind kind, absl::string_view local);
// Whether `identity` was delivered by an endpoint of `kind`.
bool IsIdentityOf(EndpointKind kind, absl::string_view identity);

// What one or more endpoints delivered after a poll.
struct EndpointEvents {
  std::vector<RawMessage> messages;  // identity: the sender
  // Packets that could not even be read as a message, per sender: the
  // owner answers each with an error.
  std::vector<std::pair<std::string, absl::Status>> refused;
  // Peers whose connection ended since the last poll (each reported once):
  // the owner forgets what it kept for them.
  std::vector<std::string> closed;
};

class MessageEndpoint {
 public:
  virtual ~MessageEndpoint() = default;
  // The address peers connect to.
  virtual const std::string& address() const = 0;
  // Whether replies to `peer` (an identity this endpoint delivered) go
  // through this endpoint. A process with several endpoints sends to the
  // first that serves the peer.
  virtual bool Serves(const std::string& peer) const = 0;
  // Sends `message` to `peer`; the bytes sent. IsQueueFull (the peer is not
  // reading) or Unavailable (the peer is gone): nothing was sent.
  virtual absl::StatusOr<size_t> Send(const std::string& peer, OutgoingMessage& message) = 0;
  // Appends the items a poll for this endpoint's traffic needs.
  virtual void AddPollItems(std::vector<zmq::pollitem_t>& items) = 0;
  // After a poll over the items the last AddPollItems appended (starting at
  // `items`): appends to `events` what arrived, at most `max_messages`
  // messages per peer connection so that one busy peer cannot starve the
  // others.
  virtual void Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) = 0;
  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t bytes_received() const = 0;
  // True for memory shared on one host (lanes), which loses, repeats and
  // reorders nothing: the fault injection leaves such an endpoint alone.
  virtual bool same_host() const { return false; }
};

// Wraps an endpoint a serving process has just opened (and returns the
// wrapper).
using EndpointDecorator =
    std::function<std::unique_ptr<MessageEndpoint>(std::unique_ptr<MessageEndpoint>)>;

// `endpoint` wrapped by `decorate`, or as it is when `decorate` is unset.
std::unique_ptr<MessageEndpoint> Decorated(std::unique_ptr<MessageEndpoint> endpoint,
                                           const EndpointDecorator& decorate);

// Waits up to `timeout` until any of `endpoints` has traffic, then collects
// it (at most `max_messages` per peer connection). No events when nothing
// came in time or a signal interrupted the wait; Unavailable when the poll
// itself failed.
absl::StatusOr<EndpointEvents> PollEndpoints(absl::Span<MessageEndpoint* const> endpoints,
                                             absl::Duration timeout, int max_messages);

// A ZeroMQ ROUTER socket as an endpoint: it serves the identities of kind
// kZeroMq (ZeroMQ routes replies to whichever peer holds the routing id; a
// peer that has gone makes Send fail with Unavailable). Its peers'
// connections never report closed.
class ZmqEndpoint final : public MessageEndpoint {
 public:
  // Binds a ROUTER where `serving` says (Socket::Bind).
  static absl::StatusOr<std::unique_ptr<ZmqEndpoint>> Bind(zmq::context_t& context,
                                                           const ServingAddress& serving,
                                                           const WireLimits& limits);
  const std::string& address() const override { return socket_->address(); }
  bool Serves(const std::string& peer) const override {
    return IsIdentityOf(EndpointKind::kZeroMq, peer);
  }
  absl::StatusOr<size_t> Send(const std::string& peer, OutgoingMessage& message) override;
  void AddPollItems(std::vector<zmq::pollitem_t>& items) override;
  void Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) override;
  uint64_t bytes_sent() const override { return socket_->counters().bytes_sent; }
  uint64_t bytes_received() const override { return socket_->counters().bytes_received; }

 private:
  explicit ZmqEndpoint(std::unique_ptr<Socket> socket) : socket_(std::move(socket)) {}
  // With a token or CURVE: logs each connection that fails the handshake
  // (a peer without the job token or the cluster's keys), read from the
  // socket's monitor.
  void WatchHandshakes(zmq::context_t& context);
  void LogHandshakeFailures();

  std::unique_ptr<Socket> socket_;
  std::unique_ptr<zmq::socket_t> monitor_;  // null when open
};

}  // namespace strata

#endif  // STRATA_CORE_NET_MESSAGE_ENDPOINT_H_
