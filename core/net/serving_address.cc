#include "core/net/serving_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata {
namespace {

absl::Status BadAddress(const std::string& address, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("bind address \"", address, "\": ", why));
}

absl::StatusOr<int> ParsePort(const std::string& address, const std::string& text) {
  int port = 0;
  if (!absl::SimpleAtoi(text, &port) || port < 0 || port > 65535) {
    return BadAddress(address, absl::StrCat("port \"", text, "\" is not a number in [0, 65535]"));
  }
  return port;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

std::string JoinHostPort(const std::string& host, int port) {
  const bool bare_ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  return bare_ipv6 ? absl::StrCat("[", host, "]:", port) : absl::StrCat(host, ":", port);
}

absl::StatusOr<BindTarget> ParseBindAddress(const std::string& address) {
  BindTarget t;
  if (absl::StartsWith(address, "ipc://")) {
    t.scheme = "ipc";
    t.host = address.substr(6);
    if (t.host.empty()) return BadAddress(address, "no path after ipc://");
    return t;
  }
  if (!absl::StartsWith(address, "tcp://")) {
    return BadAddress(address, "use tcp://HOST:PORT, tcp://HOST:FIRST-LAST or ipc://PATH");
  }
  t.scheme = "tcp";
  const std::string rest = address.substr(6);
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return BadAddress(address, "no HOST:PORT after tcp://");
  }
  t.host = rest.substr(0, colon);
  if (t.host.find(':') != std::string::npos && (t.host.front() != '[' || t.host.back() != ']')) {
    return BadAddress(address, "an IPv6 address goes in brackets: tcp://[::1]:7000");
  }
  const std::string ports = rest.substr(colon + 1);
  const size_t dash = ports.find('-');
  STRATA_ASSIGN_OR_RETURN(t.first_port, ParsePort(address, ports.substr(0, dash)));
  t.last_port = t.first_port;
  if (dash != std::string::npos) {
    STRATA_ASSIGN_OR_RETURN(t.last_port, ParsePort(address, ports.substr(dash + 1)));
    if (t.first_port == 0 || t.last_port < t.first_port) {
      return BadAddress(address, absl::StrCat("the port range ", ports,
                                              " must run from a port >= 1 up to one >= it"));
    }
  }
  return t;
}

absl::StatusOr<std::vector<std::string>> BindCandidates(const ServingAddress& serving) {
  STRATA_ASSIGN_OR_RETURN(BindTarget t, ParseBindAddress(serving.bind));
  if (t.scheme == "ipc") {
    if (!serving.interface.empty()) {
      return BadAddress(serving.bind, "an ipc address cannot bind a network interface");
    }
    return std::vector<std::string>{serving.bind};
  }
  std::string host = t.host;
  if (!serving.interface.empty()) {
    STRATA_ASSIGN_OR_RETURN(host, InterfaceAddress(serving.interface));
  }
  std::vector<std::string> out;
  for (int port = t.first_port; port <= t.last_port; ++port) {
    out.push_back(absl::StrCat("tcp://", JoinHostPort(host, port)));
  }
  return out;
}

absl::StatusOr<std::string> AdvertisedAddress(const ServingAddress& serving,
                                              const std::string& bound_endpoint) {
  STRATA_ASSIGN_OR_RETURN(BindTarget bound, ParseBindAddress(bound_endpoint));
  if (bound.scheme == "ipc") return bound_endpoint;
  std::string host = serving.advertise;
  if (host.empty() && !serving.interface.empty()) {
    STRATA_ASSIGN_OR_RETURN(host, InterfaceAddress(serving.interface));
  }
  if (host.empty()) host = bound.wildcard() ? HostName() : bound.host;
  return absl::StrCat("tcp://", JoinHostPort(host, bound.first_port));
}

absl::StatusOr<std::string> InterfaceAddress(const std::string& name) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    return absl::UnavailableError("cannot list this machine's network interfaces");
  }
  std::string ipv4, ipv6;
  std::set<std::string> names;
  for (struct ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    const int family = a->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    names.insert(a->ifa_name);
    if (name != a->ifa_name) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (family == AF_INET && ipv4.empty()) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
      if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) ipv4 = text;
    } else if (family == AF_INET6 && ipv6.empty()) {
      // A link-local address needs its scope to be dialled: skip it.
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
      if (!IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) &&
          inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text)) != nullptr) {
        ipv6 = absl::StrCat("[", text, "]");
      }
    }
  }
  freeifaddrs(list);
  if (!ipv4.empty()) return ipv4;
  if (!ipv6.empty()) return ipv6;
  return absl::NotFoundError(absl::StrCat("network interface \"", name,
                                          "\" has no address here (interfaces with one: ",
                                          absl::StrJoin(names, ", "), ")"));
}

}  // namespace strata
