#include "core/net/lane_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/net/shm_region.h"

namespace strata {
namespace {

// Room for a burst of replies the reader has not collected yet (the kernel
// caps it at twice net.core.wmem_max).
constexpr int kSocketBufferBytes = 1 << 20;

std::string ErrnoText() { return std::strerror(errno); }

// An abstract-namespace address: a leading NUL, then the name.
sockaddr_un AbstractAddress(const std::string& name, socklen_t* length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(address.sun_path) - 1);
  std::memcpy(address.sun_path + 1, name.data(), n);
  *length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return address;
}

void SetBuffers(int fd) {
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
}

}  // namespace

LaneSocket::LaneSocket(int fd) : fd_(fd), buffer_(kMaxLanePacketBytes) { SetBuffers(fd); }

LaneSocket::~LaneSocket() { ::close(fd_); }

namespace {

const std::string& Here() {
  static const std::string here = ColocationId();  // fixed for the process's life
  return here;
}

}  // namespace

bool LaneIsLocal(const std::string& address) {
  const size_t hash = address.rfind('#');
  return hash != std::string::npos && address.compare(0, hash, Here()) == 0;
}

absl::StatusOr<std::unique_ptr<LaneSocket>> LaneSocket::Connect(const std::string& address) {
  const size_t hash = address.rfind('#');
  if (hash == std::string::npos || hash + 1 == address.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed lane address \"", address, "\" (expected HOST/NETNS#NAME)"));
  }
  if (!LaneIsLocal(address)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the lane ", address, " is not on this host and network namespace (", Here(), ")"));
  }
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("lane socket: ", ErrnoText()));
  socklen_t length = 0;
  const sockaddr_un target = AbstractAddress(address.substr(hash + 1), &length);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), length) != 0) {
    const std::string why = ErrnoText();
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to the lane ", address, ": ", why));
  }
  std::unique_ptr<LaneSocket> lane(new LaneSocket(fd));
  // An abstract name is anyone's to take: only a listener of our own user
  // is the server (it checks us the same way).
  STRATA_ASSIGN_OR_RETURN(const uid_t server, lane->PeerUid());
  if (server != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the lane ", address, " is served by uid ", server, ", not by this process's uid ",
        ::geteuid(), ": another user's process holds the name"));
  }
  return lane;
}

absl::StatusOr<size_t> LaneSocket::Send(OutgoingMessage& message) {
  if (message.num_frames() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(KindName(TypeOf(message.header())), " with ", message.num_frames(),
                     " data frames cannot go over a lane (headers only)"));
  }
  kj::Array<capnp::word> words = message.EncodeHeader();
  const auto bytes = words.asBytes();
  if (bytes.size() > kMaxLanePacketBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a ", bytes.size(),
                                                   "-byte header exceeds the lane's limit of ",
                                                   kMaxLanePacketBytes, " bytes"));
  }
  // A packet socket sends a packet whole or not at all, with its
  // descriptor if it has one.
  ssize_t sent = 0;
  const int descriptor = message.passed_descriptor();
  if (descriptor < 0) {
    sent = ::send(fd_, bytes.begin(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  } else {
    iovec data{const_cast<kj::byte*>(bytes.begin()), bytes.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr packet{};
    packet.msg_iov = &data;
    packet.msg_iovlen = 1;
    packet.msg_control = control;
    packet.msg_controllen = sizeof(control);
    cmsghdr* rights = CMSG_FIRSTHDR(&packet);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(rights), &descriptor, sizeof(int));
    sent = ::sendmsg(fd_, &packet, MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  if (sent >= 0) return bytes.size();
  if (errno == EAGAIN || errno == EWOULDBLOCK) {
    return absl::UnavailableError("the lane's peer is not reading (its buffer is full)");
  }
  if (errno == EPIPE || errno == ECONNRESET)
    return absl::UnavailableError("the lane's peer closed it");
  return absl::UnavailableError(absl::StrCat("lane send failed: ", ErrnoText()));
}

absl::StatusOr<std::optional<RawMessage>> LaneSocket::ReceiveNow() {
  iovec data{buffer_.data(), buffer_.size()};
  // Room for more descriptors than a packet may bring, so that extra ones
  // are received (and closed) rather than left to the kernel's truncation.
  constexpr int kRoom = 4;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kRoom)];
  msghdr packet{};
  packet.msg_iov = &data;
  packet.msg_iovlen = 1;
  packet.msg_control = control;
  packet.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd_, &packet, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
  std::vector<std::shared_ptr<const PassedDescriptor>> descriptors;  // closed unless kept
  if (n >= 0) {
    for (cmsghdr* c = CMSG_FIRSTHDR(&packet); c != nullptr; c = CMSG_NXTHDR(&packet, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        descriptors.push_back(std::make_shared<const PassedDescriptor>(fd));
      }
    }
  }
  // A peer that died with packets unread resets the connection. (An empty
  // packet also reads as 0 bytes: a peer that sends one closes its own lane.)
  if (n == 0 || (n < 0 && errno == ECONNRESET))
    return absl::UnavailableError("the lane's peer closed it");
  if (n < 0) return absl::UnavailableError(absl::StrCat("lane receive failed: ", ErrnoText()));
  if (static_cast<size_t>(n) > kMaxLanePacketBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a ", n,
                                                   "-byte lane packet exceeds the limit of ",
                                                   kMaxLanePacketBytes, " bytes (discarded)"));
  }
  if (descriptors.size() > 1 || (packet.msg_flags & MSG_CTRUNC) != 0) {
    return absl::InvalidArgumentError(
        "a lane packet came with several descriptors; it carries one at most (discarded)");
  }
  RawMessage raw;
  raw.frames.emplace_back(buffer_.data(), static_cast<size_t>(n));
  if (!descriptors.empty()) raw.descriptor = std::move(descriptors[0]);
  return raw;
}

bool LaneSocket::WaitReadable(absl::Duration timeout) const {
  pollfd item{fd_, POLLIN, 0};
  const absl::Duration bounded = std::max(timeout, absl::ZeroDuration());
  const timespec wait = absl::ToTimespec(bounded);
  return ::ppoll(&item, 1, &wait, nullptr) > 0;
}

void LaneSocket::Shutdown() { ::shutdown(fd_, SHUT_RDWR); }

LaneListener::~LaneListener() { ::close(fd_); }

absl::StatusOr<std::unique_ptr<LaneListener>> LaneListener::Listen(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("lane socket: ", ErrnoText()));
  // Binding only the family asks the kernel for a fresh abstract name.
  socklen_t length = sizeof(sa_family_t);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (!name.empty()) address = AbstractAddress(name, &length);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(fd, 64) != 0) {
    const std::string why = ErrnoText();
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot listen for lanes", name.empty() ? "" : " at " + name, ": ", why));
  }
  sockaddr_un bound{};
  length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0 ||
      length <= offsetof(sockaddr_un, sun_path) + 1) {
    const std::string why = ErrnoText();
    ::close(fd);
    return absl::UnavailableError(absl::StrCat("lane listener has no name: ", why));
  }
  const std::string bound_name(bound.sun_path + 1, length - offsetof(sockaddr_un, sun_path) - 1);
  return std::unique_ptr<LaneListener>(
      new LaneListener(fd, absl::StrCat(ColocationId(), "#", bound_name)));
}

absl::StatusOr<std::unique_ptr<LaneSocket>> LaneListener::Accept() {
  const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::unique_ptr<LaneSocket>();
    return absl::UnavailableError(absl::StrCat("accepting a lane: ", ErrnoText()));
  }
  return std::unique_ptr<LaneSocket>(new LaneSocket(fd));
}

absl::StatusOr<uid_t> LaneSocket::PeerUid() const {
  struct ucred cred;
  socklen_t length = sizeof(cred);
  if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) {
    return absl::InternalError(absl::StrCat("cannot read a lane's peer: ", std::strerror(errno)));
  }
  return cred.uid;
}

}  // namespace strata
