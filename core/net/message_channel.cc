#include "core/net/message_channel.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace strata {

void WaitReadable(const MessageChannel& channel, absl::Duration timeout) {
  pollfd p{channel.wait_fd(), POLLIN, 0};
  const int64_t ms = std::clamp<int64_t>(absl::ToInt64Milliseconds(timeout), 0, 1 << 30);
  (void)::poll(&p, 1, static_cast<int>(ms));
}

ZmqChannel::ZmqChannel(std::unique_ptr<Socket> socket)
    : socket_(std::move(socket)), fd_(socket_->raw().get(zmq::sockopt::fd)) {}

ZmqChannel::~ZmqChannel() {
  if (monitor_ != nullptr) {
    (void)zmq_socket_monitor(socket_->raw().handle(), nullptr, 0);
    monitor_.reset();
  }
  if (watch_fd_ >= 0) ::close(watch_fd_);
}

absl::Status ZmqChannel::WatchForClose(zmq::context_t& context) {
  if (monitor_ != nullptr) return absl::OkStatus();
  static std::atomic<uint64_t> next_monitor{0};
  const std::string endpoint =
      absl::StrCat("inproc://strata-channel-monitor-", getpid(), "-", next_monitor++);
  if (zmq_socket_monitor(socket_->raw().handle(), endpoint.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    return absl::InternalError(absl::StrCat("cannot monitor the connection to ", socket_->address(),
                                            ": ", zmq_strerror(zmq_errno())));
  }
  auto monitor = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
  monitor->set(zmq::sockopt::linger, 0);
  monitor->connect(endpoint);
  const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll < 0) return absl::InternalError(absl::StrCat("epoll_create1: ", std::strerror(errno)));
  for (const int fd : {fd_, static_cast<int>(monitor->get(zmq::sockopt::fd))}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::close(epoll);
      return absl::InternalError(absl::StrCat("epoll_ctl: ", std::strerror(errno)));
    }
  }
  monitor_ = std::move(monitor);
  watch_fd_ = epoll;
  return absl::OkStatus();
}

bool ZmqChannel::SawClose() {
  // Each event is two frames: (uint16 event, uint32 value), then the
  // endpoint. Only DISCONNECTED is subscribed.
  zmq::message_t frame;
  while (monitor_->recv(frame, zmq::recv_flags::dontwait)) {
    while (frame.more()) (void)monitor_->recv(frame, zmq::recv_flags::dontwait);
    closed_ = true;
  }
  return closed_;
}

absl::StatusOr<size_t> ZmqChannel::Send(OutgoingMessage& message) {
  const uint64_t before = socket_->counters().bytes_sent;
  absl::Status s = socket_->Send(message);
  if (!s.ok()) return s;
  return static_cast<size_t>(socket_->counters().bytes_sent - before);
}

absl::StatusOr<std::optional<RawMessage>> ZmqChannel::ReceiveNow() {
  absl::StatusOr<RawMessage> raw = socket_->ReceiveNow();
  if (raw.ok()) return std::optional<RawMessage>(*std::move(raw));
  if (!absl::IsDeadlineExceeded(raw.status()) && !absl::IsUnavailable(raw.status())) {
    return raw.status();
  }
  if (monitor_ != nullptr && SawClose()) {
    // What the peer sent before closing reached the socket before the
    // monitor heard of the close: look once more.
    raw = socket_->ReceiveNow();
    if (raw.ok()) return std::optional<RawMessage>(*std::move(raw));
    return absl::UnavailableError(absl::StrCat(socket_->address(), " closed the connection"));
  }
  return std::optional<RawMessage>();
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
