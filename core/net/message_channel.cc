#include "core/net/message_channel.h"

#include <poll.h>

#include <algorithm>

namespace strata {

void WaitReadable(const MessageChannel& channel, absl::Duration timeout) {
  pollfd p{channel.wait_fd(), POLLIN, 0};
  const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, 1 << 30);
  (void)::poll(&p, 1, static_cast<int>(ms));
}

ZmqChannel::ZmqChannel(std::unique_ptr<Socket> socket)
    : socket_(std::move(socket)), fd_(socket_->raw().get(zmq::sockopt::fd)) {}

absl::StatusOr<size_t> ZmqChannel::Send(OutgoingMessage& message) {
  const uint64_t before = socket_->counters().bytes_sent;
  absl::Status s = socket_->Send(message);
  if (!s.ok()) return s;
  return static_cast<size_t>(socket_->counters().bytes_sent - before);
}

absl::StatusOr<std::optional<RawMessage>> ZmqChannel::ReceiveNow() {
  absl::StatusOr<RawMessage> raw = socket_->ReceiveNow();
  if (raw.ok()) return std::optional<RawMessage>(*std::move(raw));
  if (absl::IsDeadlineExceeded(raw.status()) || absl::IsUnavailable(raw.status())) {
    return std::optional<RawMessage>();
  }
  return raw.status();
}

absl::StatusOr<size_t> LaneChannel::Send(OutgoingMessage& message) {
  absl::StatusOr<size_t> sent = socket_->Send(message);
  if (sent.ok()) sent_ += *sent;
  return sent;
}

absl::StatusOr<std::optional<RawMessage>> LaneChannel::ReceiveNow() {
  absl::StatusOr<std::optional<RawMessage>> packet = socket_->ReceiveNow();
  if (packet.ok() && packet->has_value()) {
    for (const auto& frame : (*packet)->frames) received_ += frame.size();
  }
  return packet;
}

}  // namespace strata
