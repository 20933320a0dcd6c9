// EmulatedNetwork: a cluster network on one machine. Every emulated host is
// a Linux network namespace with one interface (eth0) on a private switch (a
// bridge in a namespace of its own), and tc shapes each host's link in both
// directions: a token bucket (tbf) at the link rate and, for latency, netem
// underneath it. Addresses come from the benchmarking range 198.18.0.0/15
// and exist only inside the namespaces, so no traffic leaves them.
//
// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2. Everything is
// removed by Destroy() or the destructor; namespaces left behind by a
// launcher that was killed outright are removed by the next Create().
//
//   EmulatedNetworkOptions o;
//   o.hosts = 3;
//   o.bytes_per_second = 125e6;  // 1 Gbit/s per host, each direction
//   o.latency_ms = 0.2;          // one way, host to host
//   STRATA_ASSIGN_OR_RETURN(auto net, EmulatedNetwork::Create(o));
//   spec.network_namespace = net->namespace_path(1);  // run a process on host 1
//   std::string address = net->host_address(1);       // "198.18.0.2"
#ifndef STRATA_TOOLS_NETEM_EMULATED_NETWORK_H_
#define STRATA_TOOLS_NETEM_EMULATED_NETWORK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace strata {

struct EmulatedNetworkOptions {
  int hosts = 2;
  double bytes_per_second = 125e6;  // each host's link rate, each direction
  double latency_ms = 0;            // one-way delay between two hosts
};

// Parses a link rate as tc writes it: "100mbit", "1gbit", "2.5gbit",
// "500kbit". Returns bytes per second.
absl::StatusOr<double> ParseBandwidth(const std::string& text);
// Parses a delay: "0.2ms", "1ms", "50us", "0". Returns milliseconds.
absl::StatusOr<double> ParseLatency(const std::string& text);
// "1gbit", "100mbit", "2.5gbit": the inverse of ParseBandwidth for display.
std::string FormatBandwidth(double bytes_per_second);

class EmulatedNetwork {
 public:
  // Builds the namespaces, links and qdiscs. Fails with FailedPrecondition,
  // saying why, where namespaces cannot be made (not root, no iproute2, no
  // permission in a container), and with Unimplemented when a latency is
  // asked of a kernel without the netem qdisc; nothing is left behind then.
  static absl::StatusOr<std::unique_ptr<EmulatedNetwork>> Create(
      const EmulatedNetworkOptions& options);
  ~EmulatedNetwork();
  EmulatedNetwork(const EmulatedNetwork&) = delete;
  EmulatedNetwork& operator=(const EmulatedNetwork&) = delete;

  // Removes every namespace, link and qdisc this network made. Idempotent.
  absl::Status Destroy();

  // Changes every host's link rate, both directions, while processes run
  // (tc changes the token buckets in place; connections stay up). The
  // latency is kept.
  absl::Status SetRate(double bytes_per_second);

  int hosts() const { return options_.hosts; }
  const EmulatedNetworkOptions& options() const { return options_; }
  // The IPv4 address of host `host` (0-based): 198.18.0.(host + 1).
  std::string host_address(int host) const;
  // The namespace's name and the path to enter it (setns, ProcessSpec).
  std::string namespace_name(int host) const;
  std::string namespace_path(int host) const;

  // Names of the network namespaces Strata made that still exist (by this
  // or any other process); for tests and diagnostics.
  static std::vector<std::string> ExistingNamespaces();

 private:
  explicit EmulatedNetwork(const EmulatedNetworkOptions& options);
  absl::Status Build();
  absl::Status Shape(const std::string& ns, const std::string& device);
  std::string switch_namespace() const;

  EmulatedNetworkOptions options_;
  std::string prefix_;                // "strata-<pid>-<n>"
  std::vector<std::string> created_;  // namespaces, in creation order
};

// What a tool prints when it cannot emulate the network it was asked for and
// runs on loopback instead (benchmarks look for it in the launcher's output).
inline constexpr char kNoNetworkNotice[] = "no emulated network";

// For tools that run on loopback where no network can be emulated: parses
// `bandwidth` ("1gbit") and `latency` ("0.2ms") and builds `hosts` hosts.
// Where namespaces cannot be made it returns nullptr and puts the reason in
// *why; a bad rate or latency, or a latency on a kernel without netem, is
// an error.
absl::StatusOr<std::unique_ptr<EmulatedNetwork>> EmulateOrFallBack(const std::string& bandwidth,
                                                                   const std::string& latency,
                                                                   int hosts, std::string* why);

}  // namespace strata

#endif  // STRATA_TOOLS_NETEM_EMULATED_NETWORK_H_
