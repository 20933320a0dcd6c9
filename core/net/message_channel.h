// MessageChannel: the transport seam of a client. One connection to one
// peer that carries whole protocol messages: an OutgoingMessage out, a
// RawMessage (still to be decoded) in. The ZeroMQ DEALER to a server and
// the shared-memory lane to a server on the same host (header packets; the
// floats in the region's slots, named by the header) both implement it, so
// whatever sits on it (counting, tracing, the fault injection of the
// reliability work: drop, duplicate, delay, reorder) sees every message of
// either path. PsClientOptions::decorate_channel wraps each channel a
// client opens.
//
// Contract: Send never blocks; a channel is driven by one thread at a time
// (its owner's lock), except Shutdown, which any thread may call to wake a
// poller.
#ifndef STRATA_CORE_NET_MESSAGE_CHANNEL_H_
#define STRATA_CORE_NET_MESSAGE_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/lane_socket.h"
#include "core/net/transport.h"

namespace strata {

class MessageChannel {
 public:
  virtual ~MessageChannel() = default;
  // The bytes sent. IsQueueFull (try again later) or Unavailable (the peer
  // is gone): nothing was sent.
  virtual absl::StatusOr<size_t> Send(OutgoingMessage& message) = 0;
  // The next message without waiting; nullopt when none is queued;
  // Unavailable once the peer has closed the connection.
  virtual absl::StatusOr<std::optional<RawMessage>> ReceiveNow() = 0;
  // Polls readable when a message may be waiting; after ReceiveNow returned
  // nullopt, the next message to arrive makes it readable.
  virtual int wait_fd() const = 0;
  // Ends the connection so that a thread polling wait_fd wakes up (a no-op
  // where closing waits for the destructor).
  virtual void Shutdown() {}
  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t bytes_received() const = 0;
  // True for memory shared on one host (a lane), which loses, repeats and
  // reorders nothing: the fault injection leaves such a channel alone.
  virtual bool same_host() const { return false; }
};

// Wraps a channel a client has just opened (and returns the wrapper).
using ChannelDecorator =
    std::function<std::unique_ptr<MessageChannel>(std::unique_ptr<MessageChannel>)>;

// Waits up to `timeout` until `channel` may have a message.
void WaitReadable(const MessageChannel& channel, absl::Duration timeout);

// A ZeroMQ socket (a DEALER) as a channel. ZeroMQ hides a closed
// connection (it reconnects), so by default ReceiveNow never reports one.
class ZmqChannel final : public MessageChannel {
 public:
  explicit ZmqChannel(std::unique_ptr<Socket> socket);
  ~ZmqChannel() override;
  // From now on, once the peer closes the connection (a killed peer's
  // kernel closes it at once), ReceiveNow returns the messages that came
  // before, then Unavailable, and stays so. For a peer whose state dies
  // with its connection (an FC worker midway through an exchange); not for
  // a server, whose clients resend to it when it comes back. `context` is
  // the socket's.
  absl::Status WatchForClose(zmq::context_t& context);
  absl::StatusOr<size_t> Send(OutgoingMessage& message) override;
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override;
  int wait_fd() const override { return watch_fd_ >= 0 ? watch_fd_ : fd_; }
  uint64_t bytes_sent() const override { return socket_->counters().bytes_sent; }
  uint64_t bytes_received() const override { return socket_->counters().bytes_received; }

 private:
  // Reads the socket monitor's queued events; true once one was a close.
  bool SawClose();

  std::unique_ptr<Socket> socket_;
  int fd_;  // ZMQ_FD
  // With WatchForClose: the monitor's PAIR socket, and an epoll set of both
  // sockets' ZMQ_FDs that polls readable when either may have news.
  std::unique_ptr<zmq::socket_t> monitor_;
  int watch_fd_ = -1;
  bool closed_ = false;
};

// A lane socket (core/net/lane_socket.h) as a channel.
class LaneChannel final : public MessageChannel {
 public:
  explicit LaneChannel(std::unique_ptr<LaneSocket> socket) : socket_(std::move(socket)) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& message) override;
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override;
  int wait_fd() const override { return socket_->fd(); }
  void Shutdown() override { socket_->Shutdown(); }
  uint64_t bytes_sent() const override { return sent_; }
  uint64_t bytes_received() const override { return received_; }
  bool same_host() const override { return true; }

 private:
  std::unique_ptr<LaneSocket> socket_;
  uint64_t sent_ = 0, received_ = 0;  // header packets only
};

}  // namespace strata

#endif  // STRATA_CORE_NET_MESSAGE_CHANNEL_H_
