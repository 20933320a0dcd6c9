// Where a serving socket binds, and the address its peers are told to dial.
//
// A cluster host usually binds every interface (0.0.0.0) on ports a
// security group or NSG lets through, and announces the one address its
// peers reach it by. ServingAddress says both:
//
//   bind       tcp://HOST:PORT        one port (0: any free port)
//              tcp://HOST:FIRST-LAST  the first free port of a range, so that
//                                     every socket of a process (an FC
//                                     worker's and its expert exchange's)
//                                     gets a port of the range
//              HOST: an IPv4 address, * or 0.0.0.0 (every IPv4 interface),
//              an IPv6 literal in brackets ([::] every interface, IPv6 and
//              IPv4), or a name ZeroMQ binds by (an interface such as eth0)
//              ipc://PATH, ipc://*    a Unix socket (advertise does not apply)
//   interface  a network interface name (eth0, ib0; like DMLC_INTERFACE or
//              NCCL_SOCKET_IFNAME): bind on its address instead of HOST, and
//              advertise that address unless `advertise` says otherwise
//   advertise  the host (name or address) peers dial, with the bound port;
//              default: the bound host, or this machine's host name when the
//              bound host is a wildcard
//
//   ServingAddress a{"tcp://0.0.0.0:7000-7009", "node3.cluster", ""};
//   socket binds tcp://0.0.0.0:7000 (or 7001 when taken ...), peers get
//   tcp://node3.cluster:7000
#ifndef STRATA_CORE_NET_SERVING_ADDRESS_H_
#define STRATA_CORE_NET_SERVING_ADDRESS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace strata {

struct ServingAddress {
  ServingAddress() = default;
  // A plain address: bind there, advertise what was bound.
  ServingAddress(std::string bind_address) : bind(std::move(bind_address)) {}  // NOLINT: implicit
  ServingAddress(const char* bind_address) : bind(bind_address) {}             // NOLINT: implicit

  std::string bind = "tcp://127.0.0.1:0";
  std::string advertise;  // "": derived (above)
  std::string interface;  // "": bind's own host
};

// A parsed --bind.
struct BindTarget {
  std::string scheme;  // "tcp" or "ipc"
  std::string host;    // tcp: as written, brackets kept ("[::1]"); ipc: the path
  int first_port = 0;  // tcp only; 0 = any free port
  int last_port = 0;   // == first_port unless a range was given
  bool ipv6() const { return !host.empty() && host.front() == '['; }
  bool wildcard() const { return host == "*" || host == "0.0.0.0" || host == "[::]"; }
};

// InvalidArgument naming what is wrong with `address` (scheme, port, range).
absl::StatusOr<BindTarget> ParseBindAddress(const std::string& address);

// The endpoints to try binding, in order: one per port of the range, on
// the interface's address when `serving.interface` is set.
absl::StatusOr<std::vector<std::string>> BindCandidates(const ServingAddress& serving);

// The address peers dial, given the endpoint the socket reports once bound
// (ZeroMQ's last endpoint, "tcp://0.0.0.0:7003"): the advertised or derived
// host with the bound port. ipc endpoints are returned as they are.
absl::StatusOr<std::string> AdvertisedAddress(const ServingAddress& serving,
                                              const std::string& bound_endpoint);

// The address of network interface `name` (IPv4 when it has one, else its
// first IPv6 address, bracketed): NotFound naming the interfaces there are.
absl::StatusOr<std::string> InterfaceAddress(const std::string& name);

// "host:port" with the host bracketed when it is an IPv6 literal.
std::string JoinHostPort(const std::string& host, int port);

}  // namespace strata

#endif  // STRATA_CORE_NET_SERVING_ADDRESS_H_
