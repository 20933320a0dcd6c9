#include "core/net/transport.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/net/curve.h"
#include "core/util/clock.h"
#include "core/status.h"
#include "core/util/thread_sanitizer.h"
#include "core/util/log.h"

namespace strata {
namespace {

// How many kinds the control vocabulary (protocol.capnp) has.
size_t ControlKinds() {
  static const size_t kinds = capnp::Schema::from<wire::Kind>().getEnumerants().size();
  return kinds;
}

// Called by ZeroMQ, on its I/O thread, once a zero-copy frame is sent.
void ReleaseTensorFrame(void* /*data*/, void* hint) {
  TsanAcquire(hint);  // ZeroMQ's queue handed it over (core/util/thread_sanitizer.h)
  delete static_cast<Tensor*>(hint);
}

}  // namespace

OutgoingMessage::OutgoingMessage(MessageType type) : header_(builder_.initRoot<wire::Header>()) {
  header_.setMajor(wire::PROTOCOL_MAJOR);
  header_.setMinor(wire::PROTOCOL_MINOR);
  SetType(header_, type);
}

PassedDescriptor::~PassedDescriptor() { ::close(fd_); }

void OutgoingMessage::AddFrame(const Tensor& tensor) { frames_.push_back({tensor, {}}); }

void OutgoingMessage::AddFrame(std::string bytes) {
  frames_.push_back({Tensor(), std::move(bytes)});
}

std::string OutgoingMessage::SerializedHeaderForTest() {
  kj::Array<capnp::word> words = capnp::messageToFlatArray(builder_);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

void IncomingMessage::CopyFrameTo(size_t i, float* dst) const {
  std::memcpy(dst, frame_data(i), frames_[i].size());
}

absl::StatusOr<IncomingMessage> Decode(RawMessage raw, const WireLimits& limits) {
  if (raw.frames.empty()) return absl::InvalidArgumentError("empty message (no header frame)");
  const size_t frames = raw.frames.size() + raw.dropped_frames - 1;
  if (frames > limits.max_frames) {
    return absl::InvalidArgumentError(
        absl::StrCat("message has ", frames, " data frames, the limit is ", limits.max_frames));
  }
  uint64_t total = raw.dropped_bytes;
  for (const auto& f : raw.frames) total += f.size();
  if (raw.dropped_frames > 0 || total > limits.max_message_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "message of ", total, " bytes exceeds the limit of ", limits.max_message_bytes, " bytes"));
  }
  const zmq::message_t& head = raw.frames[0];
  if (head.size() == 0 || head.size() % sizeof(capnp::word) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("malformed header: ", head.size(),
                                                   " bytes is not a whole number of 8-byte words"));
  }
  IncomingMessage msg;
  msg.identity_ = std::move(raw.identity);
  msg.curve_user_ = std::move(raw.curve_user);
  msg.descriptor_ = std::move(raw.descriptor);
  msg.header_words_ = kj::heapArray<capnp::word>(head.size() / sizeof(capnp::word));
  std::memcpy(msg.header_words_.begin(), head.data(), head.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_limit_words;
  options.nestingLimit = 16;
  try {
    msg.reader_ = std::make_unique<capnp::FlatArrayMessageReader>(msg.header_words_, options);
    wire::Header::Reader h = msg.reader_->getRoot<wire::Header>();
    if (h.getMajor() != wire::PROTOCOL_MAJOR) {
      return absl::FailedPreconditionError(absl::StrCat(
          "peer speaks protocol version ", h.getMajor(), ".", h.getMinor(), ", this node speaks ",
          wire::PROTOCOL_MAJOR, ".", wire::PROTOCOL_MINOR, " (major versions must match)"));
    }
    if (h.getService() == kControlService && h.getKind() >= ControlKinds()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown message kind ", h.getKind()));
    }
    // A service's body is its struct or nothing; what the struct holds is
    // the receiving service's to check.
    const capnp::PointerType body = h.getBody().getPointerType();
    if (body != capnp::PointerType::NULL_ && body != capnp::PointerType::STRUCT) {
      return absl::InvalidArgumentError(
          absl::StrCat(KindName(TypeOf(h)), " has a body that is not a struct"));
    }
    auto sizes = h.getFrameBytes();
    if (sizes.size() != raw.frames.size() - 1) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " header declares ",
                                                     sizes.size(), " data frames, ",
                                                     raw.frames.size() - 1, " arrived"));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] != raw.frames[i + 1].size()) {
        return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), " data frame ", i,
                                                       " has ", raw.frames[i + 1].size(),
                                                       " bytes, the header declares ", sizes[i]));
      }
    }
  } catch (const kj::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed header: ", e.getDescription().cStr()));
  }
  for (size_t i = 1; i < raw.frames.size(); ++i) {
    zmq::message_t& frame = raw.frames[i];
    std::unique_ptr<uint64_t[]> copy;
    if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(uint64_t) != 0) {
      copy.reset(new uint64_t[(frame.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t)]);
      std::memcpy(copy.get(), frame.data(), frame.size());
    }
    msg.aligned_copies_.push_back(std::move(copy));
    msg.frames_.push_back(std::move(frame));
  }
  return msg;
}

std::optional<HeaderGlance> PeekHeader(const RawMessage& raw, const WireLimits& limits) {
  if (raw.frames.empty()) return std::nullopt;
  const zmq::message_t& head = raw.frames[0];
  if (head.size() == 0 || head.size() % sizeof(capnp::word) != 0) return std::nullopt;
  auto words = kj::heapArray<capnp::word>(head.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), head.data(), head.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = limits.traversal_limit_words;
  try {
    capnp::FlatArrayMessageReader reader(words, options);
    const wire::Header::Reader h = reader.getRoot<wire::Header>();
    return HeaderGlance{TypeOf(h), h.getSenderRole(), h.getSenderRank(), h.getRequestId(),
                        h.getIteration()};
  } catch (const kj::Exception&) {
    return std::nullopt;
  }
}

uint64_t PeekRequestId(const RawMessage& raw, const WireLimits& limits) {
  const std::optional<HeaderGlance> glance = PeekHeader(raw, limits);
  return glance.has_value() ? glance->request_id : 0;
}

Socket::Socket(zmq::context_t& context, SocketKind kind, const WireLimits& limits)
    : socket_(context,
              kind == SocketKind::kRouter ? zmq::socket_type::router : zmq::socket_type::dealer),
      kind_(kind),
      limits_(limits) {
  socket_.set(zmq::sockopt::linger, 0);
  // A frame far above the message limit is dropped by ZeroMQ before it is
  // buffered (the peer is disconnected); smaller oversize messages reach
  // Decode, which refuses them with an error reply.
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(2 * limits.max_message_bytes + 4096));
  socket_.set(zmq::sockopt::sndhwm, limits.queue_messages);
  socket_.set(zmq::sockopt::rcvhwm, limits.queue_messages);
  if (kind == SocketKind::kRouter) socket_.set(zmq::sockopt::router_mandatory, 1);
}

Socket::~Socket() = default;

namespace {

// ZeroMQ dials and binds IPv6 only on sockets told to.
void AllowIpv6For(zmq::socket_t& socket, const std::string& address) {
  if (address.find('[') != std::string::npos) socket.set(zmq::sockopt::ipv6, 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Socket>> Socket::Bind(zmq::context_t& context, SocketKind kind,
                                                     const ServingAddress& serving,
                                                     const WireLimits& limits) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> candidates, BindCandidates(serving));
  std::unique_ptr<Socket> s(new Socket(context, kind, limits));
  STRATA_ASSIGN_OR_RETURN(s->mechanism_, SecureServerSocket(context, s->socket_, candidates[0]));
  for (const std::string& address : candidates) {
    try {
      AllowIpv6For(s->socket_, address);
      s->socket_.bind(address);
    } catch (const zmq::error_t& e) {
      if (e.num() == EADDRINUSE && candidates.size() > 1) continue;  // the range's next port
      return absl::UnavailableError(absl::StrCat("cannot bind ", address, ": ", e.what()));
    }
    const std::string bound = s->socket_.get(zmq::sockopt::last_endpoint);
    STRATA_ASSIGN_OR_RETURN(s->address_, AdvertisedAddress(serving, bound));
    if (s->address_ != bound) {
      LogInfo("bound %s; peers dial %s", bound.c_str(), s->address_.c_str());
    }
    return s;
  }
  return absl::UnavailableError(absl::StrCat("cannot bind ", serving.bind,
                                             ": every port of the range is in use"));
}

absl::StatusOr<std::unique_ptr<Socket>> Socket::Connect(zmq::context_t& context, SocketKind kind,
                                                        const std::string& address,
                                                        const WireLimits& limits) {
  std::unique_ptr<Socket> s(new Socket(context, kind, limits));
  try {
    s->socket_.set(zmq::sockopt::reconnect_ivl, 100);
    s->socket_.set(zmq::sockopt::reconnect_ivl_max, 1000);
    s->mechanism_ = SecureClientSocket(s->socket_);
    s->WatchHandshakes(context);
    AllowIpv6For(s->socket_, address);
    s->socket_.connect(address);
    s->address_ = address;
  } catch (const zmq::error_t& e) {
    return absl::UnavailableError(absl::StrCat("cannot connect to ", address, ": ", e.what()));
  }
  return s;
}

kj::Array<capnp::word> OutgoingMessage::EncodeHeader() {
  auto sizes = header_.initFrameBytes(static_cast<unsigned>(frames_.size()));
  for (size_t i = 0; i < frames_.size(); ++i) {
    const auto& f = frames_[i];
    sizes.set(static_cast<unsigned>(i), f.tensor.defined() ? f.tensor.nbytes() : f.bytes.size());
  }
  return capnp::messageToFlatArray(builder_);
}

absl::Status Socket::Send(OutgoingMessage& message, absl::string_view identity) {
  if (message.passed_descriptor() >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(KindName(TypeOf(message.header())),
                     " passes a descriptor, which only a shared memory lane carries"));
  }
  kj::Array<capnp::word> words = message.EncodeHeader();
  auto bytes = words.asBytes();
  uint64_t total = bytes.size();
  // Non-blocking: ZeroMQ checks the queue when a message's first frame goes
  // in, and then takes the whole message.
  constexpr auto kMore = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
  constexpr auto kLast = zmq::send_flags::dontwait;
  auto full = [&]() {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the send queue to ", kind_ == SocketKind::kRouter ? "a peer of " : "", address_,
        " is full (", limits_.queue_messages, " messages): the peer is not reading",
        mechanism_ != Mechanism::kOpen
            ? ", or no connection to it is up (a refused handshake: another job token or key?)"
            : ""));
  };
  try {
    const bool has_frames = !message.frames_.empty();
    if (kind_ == SocketKind::kRouter) {
      if (!socket_.send(zmq::buffer(identity.data(), identity.size()), kMore)) return full();
    }
    if (!socket_.send(zmq::buffer(bytes.begin(), bytes.size()), has_frames ? kMore : kLast)) {
      return full();
    }
    for (size_t i = 0; i < message.frames_.size(); ++i) {
      auto& f = message.frames_[i];
      const auto flags = i + 1 < message.frames_.size() ? kMore : kLast;
      if (f.tensor.defined()) {
        // Zero-copy: ZeroMQ calls ReleaseTensorFrame when it no longer needs the bytes.
        auto* hold = new Tensor(f.tensor);
        zmq::message_t frame(hold->raw_data(), hold->nbytes(), ReleaseTensorFrame, hold);
        total += frame.size();
        TsanRelease(hold);  // our last touch of it: ZeroMQ's I/O thread frees it
        socket_.send(frame, flags);
      } else {
        total += f.bytes.size();
        socket_.send(zmq::buffer(f.bytes), flags);
      }
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) {
      return absl::UnavailableError("peer is no longer connected");
    }
    return absl::UnavailableError(absl::StrCat("send failed: ", e.what()));
  }
  counters_.bytes_sent += total;
  counters_.messages_sent++;
  return absl::OkStatus();
}

void Socket::WatchHandshakes(zmq::context_t& context) {
  static std::atomic<uint64_t> next{0};
  const std::string endpoint = absl::StrCat("inproc://strata-client-handshakes-", next++);
  if (zmq_socket_monitor(socket_.handle(), endpoint.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
    return;  // no watch: a refusal then shows as a wait that times out
  }
  handshakes_ = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
  handshakes_->set(zmq::sockopt::linger, 0);
  handshakes_->connect(endpoint);
}

void Socket::StopWatchingHandshakes() {
  if (handshakes_ == nullptr) return;
  (void)zmq_socket_monitor(socket_.handle(), nullptr, 0);
  handshakes_.reset();
}

absl::Status Socket::HandshakeRefusal() {
  if (handshakes_ == nullptr) return refused_;
  while (const std::optional<MonitorEvent> event = NextMonitorEvent(*handshakes_)) {
    const auto [id, value] = *event;
    if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      refused_ = absl::OkStatus();
      broken_handshakes_ = 0;
      continue;
    }
    // A refusal (authentication, a protocol mismatch) is final; a handshake
    // that broke off may be a peer restarting, unless it keeps happening.
    const bool refusal =
        id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH || id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
    const bool broke_off = id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;
    if (broke_off) ++broken_handshakes_;
    if (refusal || (broke_off && broken_handshakes_ >= kBrokenHandshakesToRefusal)) {
      refused_ = absl::PermissionDeniedError(
          absl::StrCat(address_, " refused the connection: ",
                       DescribeHandshakeFailure(mechanism_, /*serving=*/false, id, value)));
    }
  }
  return refused_;
}

absl::StatusOr<RawMessage> Socket::Receive(absl::Duration timeout) {
  // A blocking wait also watches the handshakes, so that a refused
  // connection ends it at once; a look without waiting (the data path's)
  // polls the socket alone.
  const bool waits = timeout != absl::ZeroDuration();
  const bool forever = timeout == absl::InfiniteDuration();
  const bool watch = waits && handshakes_ != nullptr;
  zmq::pollitem_t items[2] = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0},
                              {watch ? static_cast<void*>(*handshakes_) : nullptr, 0, ZMQ_POLLIN, 0}};
  const absl::Time deadline =
      waits && !forever ? MonotonicNow() + timeout : absl::InfiniteFuture();
  while (true) {
    const long ms = !waits    ? 0
                    : forever ? -1
                              : absl::ToInt64Milliseconds(
                                    std::max(deadline - MonotonicNow(), absl::ZeroDuration()));
    int ready = 0;
    try {
      ready = zmq::poll(items, watch ? 2 : 1, std::chrono::milliseconds(ms));
    } catch (const zmq::error_t& e) {
      return absl::UnavailableError(absl::StrCat("poll failed: ", e.what()));
    }
    if (items[0].revents & ZMQ_POLLIN) return ReadMultipart();
    if (ready == 0) break;  // the time is up
    STRATA_RETURN_IF_ERROR(HandshakeRefusal());  // the watch's news, not a refusal yet
  }
  if (timeout == absl::ZeroDuration()) return absl::UnavailableError("no message queued");
  return absl::DeadlineExceededError(
      absl::StrCat("no message from ", address_, " within ", absl::FormatDuration(timeout)));
}

absl::StatusOr<RawMessage> Socket::ReadMultipart() {
  RawMessage raw;
  bool first = true;
  uint64_t total = 0;
  while (true) {
    zmq::message_t frame;
    try {
      if (!socket_.recv(frame, zmq::recv_flags::none)) {
        return absl::UnavailableError("receive interrupted");
      }
    } catch (const zmq::error_t& e) {
      return absl::UnavailableError(absl::StrCat("receive failed: ", e.what()));
    }
    const bool more = frame.more();
    const bool header = kind_ == SocketKind::kRouter ? !first && raw.frames.empty() : first;
    if (header && mechanism_ == Mechanism::kCurve) {
      // The key's jobs, as the ZAP handler admitted it (the frames a peer
      // sent carry its connection's metadata; a ROUTER's routing-id frame
      // does not).
      const char* user = zmq_msg_gets(frame.handle(), "User-Id");
      if (user != nullptr) raw.curve_user = user;
    }
    if (first && kind_ == SocketKind::kRouter) {
      raw.identity.assign(static_cast<const char*>(frame.data()), frame.size());
    } else if (!raw.frames.empty() &&
               (raw.dropped_frames > 0 || total + frame.size() > limits_.max_message_bytes ||
                raw.frames.size() > limits_.max_frames)) {
      // Past a limit: release the rest as it is read. The header frame is
      // always kept (ZeroMQ bounds it at twice the limit), so the sender
      // can be answered.
      raw.dropped_bytes += frame.size();
      raw.dropped_frames++;
    } else {
      total += frame.size();
      raw.frames.push_back(std::move(frame));
    }
    first = false;
    if (!more) break;
  }
  total += raw.dropped_bytes;
  counters_.bytes_received += total;
  counters_.messages_received++;
  return raw;
}

std::optional<MonitorEvent> NextMonitorEvent(zmq::socket_t& monitor) {
  while (true) {
    zmq::message_t event, endpoint;
    try {
      if (!monitor.recv(event, zmq::recv_flags::dontwait)) return std::nullopt;
      if (event.more()) (void)monitor.recv(endpoint, zmq::recv_flags::none);
    } catch (const zmq::error_t&) {
      return std::nullopt;
    }
    if (event.size() < sizeof(uint16_t) + sizeof(int32_t)) continue;  // not an event
    MonitorEvent e;
    std::memcpy(&e.id, event.data(), sizeof(e.id));
    std::memcpy(&e.value, static_cast<const char*>(event.data()) + sizeof(e.id), sizeof(e.value));
    return e;
  }
}

bool IsQueueFull(const absl::Status& status) { return absl::IsResourceExhausted(status); }

bool IsRefusal(wire::Header::Reader header) {
  return TypeOf(header) == wire::Kind::ERROR || header.getErrorCode() != 0;
}

void FillError(wire::Header::Builder header, const absl::Status& status) {
  header.setErrorCode(static_cast<uint32_t>(status.code()));
  header.setErrorMessage(std::string(status.message()));
}

absl::Status ErrorFromHeader(wire::Header::Reader header) {
  const auto code = static_cast<absl::StatusCode>(header.getErrorCode());
  return absl::Status(code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
                      header.getErrorMessage().cStr());
}

}  // namespace strata
