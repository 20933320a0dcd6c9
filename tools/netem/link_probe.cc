#include "tools/netem/link_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/process/network_namespace.h"
#include "core/util/clock.h"

namespace strata {
namespace {

constexpr int kPings = 20;
constexpr int kStallSeconds = 10;

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat("link probe: ", what, ": ", std::strerror(errno)));
}

// A socket closed on scope exit, with send/receive timeouts so a stalled
// link fails the probe instead of hanging it.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {
    if (fd_ < 0) return;
    timeval tv{kStallSeconds, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

sockaddr_in AddressOf(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

absl::Status Enter(const EmulatedNetwork& net, int host) {
  const int err = EnterNetworkNamespace(net.namespace_path(host).c_str());
  if (err != 0) {
    return absl::InternalError(absl::StrCat("link probe: cannot enter ", net.namespace_path(host),
                                            ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

// The receiving end: accepts one connection, echoes the pings, then counts
// the stream. Rate is taken after the first fifth of the transfer (TCP's
// slow start).
absl::Status Receive(const EmulatedNetwork& net, int host, double seconds,
                     std::promise<int>& port_out, LinkMeasurement& out) {
  bool port_set = false;
  auto fail = [&](absl::Status s) {
    if (!port_set) port_out.set_value(-1);
    return s;
  };
  if (absl::Status s = Enter(net, host); !s.ok()) return fail(s);
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) return fail(Errno("socket"));
  sockaddr_in a = AddressOf(net.host_address(host), 0);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    return fail(Errno(absl::StrCat("bind ", net.host_address(host))));
  }
  if (::listen(listener.get(), 1) != 0) return fail(Errno("listen"));
  socklen_t len = sizeof(a);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
  port_out.set_value(ntohs(a.sin_port));
  port_set = true;
  pollfd p{listener.get(), POLLIN, 0};
  if (::poll(&p, 1, kStallSeconds * 1000) != 1) return Errno("no connection from the sender");
  Fd conn(::accept(listener.get(), nullptr, nullptr));
  if (conn.get() < 0) return Errno("accept");
  char byte = 0;
  for (int i = 0; i < kPings; ++i) {
    if (::recv(conn.get(), &byte, 1, MSG_WAITALL) != 1 || ::send(conn.get(), &byte, 1, 0) != 1) {
      return Errno("ping");
    }
  }
  std::vector<char> buffer(1 << 20);
  double start = -1, mark = -1, last = 0;
  double total = 0, at_mark = 0;
  while (true) {
    const ssize_t n = ::recv(conn.get(), buffer.data(), buffer.size(), 0);
    if (n == 0) break;
    if (n < 0) return Errno("receiving the stream");
    last = MonotonicSeconds();
    if (start < 0) start = last;
    total += static_cast<double>(n);
    if (mark < 0 && last - start >= 0.2 * seconds) {
      mark = last;
      at_mark = total;
    }
  }
  if (mark < 0 || last <= mark) {
    return absl::InternalError("link probe: the transfer was too short to time");
  }
  out.bytes = total - at_mark;
  out.bytes_per_second = out.bytes / (last - mark);
  return absl::OkStatus();
}

absl::Status Send(const EmulatedNetwork& net, int host, int to, double seconds, int port,
                  LinkMeasurement& out) {
  if (absl::Status s = Enter(net, host); !s.ok()) return s;
  Fd conn(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (conn.get() < 0) return Errno("socket");
  const int one = 1;
  ::setsockopt(conn.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  sockaddr_in a = AddressOf(net.host_address(to), port);
  if (::connect(conn.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    return Errno(absl::StrCat("connect ", net.host_address(host), " -> ", net.host_address(to)));
  }
  std::vector<double> rtts;
  char byte = 1;
  for (int i = 0; i < kPings; ++i) {
    const double t0 = MonotonicSeconds();
    if (::send(conn.get(), &byte, 1, 0) != 1 || ::recv(conn.get(), &byte, 1, MSG_WAITALL) != 1) {
      return Errno("ping");
    }
    rtts.push_back((MonotonicSeconds() - t0) * 1e3);
  }
  std::sort(rtts.begin(), rtts.end());
  out.rtt_ms = rtts[rtts.size() / 2];
  std::vector<char> buffer(1 << 20, 'x');
  const double end = MonotonicSeconds() + seconds;
  while (MonotonicSeconds() < end) {
    if (::send(conn.get(), buffer.data(), buffer.size(), MSG_NOSIGNAL) < 0) {
      return Errno("sending the stream");
    }
  }
  ::shutdown(conn.get(), SHUT_WR);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LinkMeasurement> MeasureLink(const EmulatedNetwork& network, int from, int to,
                                            double seconds) {
  if (from < 0 || to < 0 || from >= network.hosts() || to >= network.hosts() || from == to) {
    return absl::InvalidArgumentError(absl::StrCat("link probe: hosts ", from, " -> ", to, " of a ",
                                                   network.hosts(), "-host network"));
  }
  if (!(seconds > 0)) return absl::InvalidArgumentError("link probe: seconds must be > 0");
  LinkMeasurement result;
  std::promise<int> port_promise;
  std::future<int> port = port_promise.get_future();
  absl::Status received, sent;
  // Namespaces are per thread: each end runs on a thread of its own.
  std::thread receiver([&] { received = Receive(network, to, seconds, port_promise, result); });
  const int p = port.get();
  if (p > 0) {
    std::thread sender([&] { sent = Send(network, from, to, seconds, p, result); });
    sender.join();
  }
  receiver.join();
  if (!sent.ok()) return sent;
  if (!received.ok()) return received;
  return result;
}

}  // namespace strata
