#include "core/net/message_endpoint.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/net/connection_security.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {

std::string EndpointIdentity(EndpointKind kind, absl::string_view local) {
  std::string identity(1, static_cast<char>(kind));
  identity.append(local.data(), local.size());
  return identity;
}

bool IsIdentityOf(EndpointKind kind, absl::string_view identity) {
  return !identity.empty() && identity.front() == static_cast<char>(kind);
}

std::unique_ptr<MessageEndpoint> Decorated(std::unique_ptr<MessageEndpoint> endpoint,
                                           const EndpointDecorator& decorate) {
  return decorate ? decorate(std::move(endpoint)) : std::move(endpoint);
}

absl::StatusOr<EndpointEvents> PollEndpoints(absl::Span<MessageEndpoint* const> endpoints,
                                             absl::Duration timeout, int max_messages) {
  std::vector<zmq::pollitem_t> items;
  std::vector<size_t> first_item;
  first_item.reserve(endpoints.size());
  for (MessageEndpoint* endpoint : endpoints) {
    first_item.push_back(items.size());
    endpoint->AddPollItems(items);
  }
  const long ms = timeout == absl::InfiniteDuration()
                      ? -1
                      : absl::ToInt64Milliseconds(std::max(timeout, absl::ZeroDuration()));
  EndpointEvents events;
  try {
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(ms));
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return events;
    return absl::UnavailableError(absl::StrCat("poll failed: ", e.what()));
  }
  for (size_t i = 0; i < endpoints.size(); ++i) {
    endpoints[i]->Collect(items.data() + first_item[i], max_messages, events);
  }
  return events;
}

absl::StatusOr<std::unique_ptr<ZmqEndpoint>> ZmqEndpoint::Bind(zmq::context_t& context,
                                                               const ServingAddress& serving,
                                                               const WireLimits& limits) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Socket> socket,
                          Socket::Bind(context, SocketKind::kRouter, serving, limits));
  std::unique_ptr<ZmqEndpoint> endpoint(new ZmqEndpoint(std::move(socket)));
  if (endpoint->socket_->mechanism() != Mechanism::kOpen) endpoint->WatchHandshakes(context);
  return endpoint;
}

void ZmqEndpoint::WatchHandshakes(zmq::context_t& context) {
  static std::atomic<uint64_t> next{0};
  const std::string address = absl::StrCat("inproc://strata-handshakes-", next++);
  if (zmq_socket_monitor(socket_->raw().handle(), address.c_str(),
                         ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) != 0) {
    LogWarning("cannot watch the handshakes on %s: %s", socket_->address().c_str(),
               zmq_strerror(zmq_errno()));
    return;
  }
  monitor_ = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
  monitor_->set(zmq::sockopt::linger, 0);
  monitor_->connect(address);
}

void ZmqEndpoint::LogHandshakeFailures() {
  while (const std::optional<MonitorEvent> event = NextMonitorEvent(*monitor_)) {
    LogRefusal("refused a connection to %s: %s", socket_->address().c_str(),
               DescribeHandshakeFailure(socket_->mechanism(), /*serving=*/true, event->id,
                                        event->value)
                   .c_str());
  }
}

absl::StatusOr<size_t> ZmqEndpoint::Send(const std::string& peer, OutgoingMessage& message) {
  if (!Serves(peer)) {
    return absl::UnavailableError(
        absl::StrCat("not a peer of the socket ", socket_->address()));
  }
  const uint64_t before = socket_->counters().bytes_sent;
  STRATA_RETURN_IF_ERROR(socket_->Send(message, absl::string_view(peer).substr(1)));
  return socket_->counters().bytes_sent - before;
}

void ZmqEndpoint::AddPollItems(std::vector<zmq::pollitem_t>& items) {
  items.push_back({static_cast<void*>(socket_->raw()), 0, ZMQ_POLLIN, 0});
  if (monitor_ != nullptr) items.push_back({static_cast<void*>(*monitor_), 0, ZMQ_POLLIN, 0});
}

void ZmqEndpoint::Collect(const zmq::pollitem_t* items, int max_messages, EndpointEvents& events) {
  if (monitor_ != nullptr && (items[1].revents & ZMQ_POLLIN)) LogHandshakeFailures();
  if (!(items[0].revents & ZMQ_POLLIN)) return;
  // A burst is read without a poll between messages; the limit keeps the
  // other endpoints of the same poll served.
  for (int n = 0; n < max_messages; ++n) {
    absl::StatusOr<RawMessage> raw = socket_->ReceiveNow();
    if (!raw.ok()) break;
    raw->identity = EndpointIdentity(EndpointKind::kZeroMq, raw->identity);
    events.messages.push_back(*std::move(raw));
  }
}

}  // namespace strata
