#include "tools/netem/emulated_network.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {
namespace {

constexpr char kNamespacePrefix[] = "strata-";
constexpr char kNamespaceDir[] = "/run/netns";
constexpr int kMaxHosts = 250;

// Runs an iproute2 command; on failure the error quotes the command and
// what it printed.
absl::Status RunTool(const std::vector<std::string>& argv) {
  char tmpl[] = "/tmp/strata_netem_XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) return absl::InternalError(absl::StrCat("mkstemp: ", std::strerror(errno)));
  ::close(fd);
  ProcessSpec spec;
  spec.argv = argv;
  spec.output_path = tmpl;
  spec.interruptible = false;  // a Ctrl-C must not cut building or removing a network short
  absl::StatusOr<int> code = RunProcess(spec, absl::Seconds(30));
  const std::string output = FileTail(tmpl, 500);
  std::remove(tmpl);
  if (!code.ok()) return code.status();
  if (*code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("`", absl::StrJoin(argv, " "), "` failed (status ", *code, "): ", output));
  }
  return absl::OkStatus();
}

// The owner pid in "strata-<pid>-<n>-<role>", or -1.
pid_t OwnerOf(const std::string& name) {
  if (!absl::StartsWith(name, kNamespacePrefix)) return -1;
  std::vector<std::string> parts = absl::StrSplit(name.substr(std::strlen(kNamespacePrefix)), '-');
  int pid = 0;
  if (parts.empty() || !absl::SimpleAtoi(parts[0], &pid) || pid <= 0) return -1;
  return pid;
}

// Removes namespaces whose launcher no longer runs (killed with SIGKILL,
// which no cleanup survives).
void RemoveStaleNamespaces() {
  for (const std::string& name : EmulatedNetwork::ExistingNamespaces()) {
    const pid_t owner = OwnerOf(name);
    if (owner > 0 && ::kill(owner, 0) != 0 && errno == ESRCH) {
      if (RunTool({"ip", "netns", "delete", name}).ok()) {
        LogInfo("netem: removed %s, left behind by process %d", name.c_str(),
                static_cast<int>(owner));
      }
    }
  }
}

// "<number><unit>" (case-insensitive) for one of `units` (suffix, scale):
// the number times the scale, when the number is finite and >= 0.
std::optional<double> ParseWithUnit(const std::string& text,
                                    std::initializer_list<std::pair<const char*, double>> units) {
  const std::string t = absl::AsciiStrToLower(text);
  for (const auto& [unit, scale] : units) {
    if (!absl::EndsWith(t, unit) || t.size() <= std::strlen(unit)) continue;
    double value = 0;
    if (absl::SimpleAtod(t.substr(0, t.size() - std::strlen(unit)), &value) && value >= 0 &&
        std::isfinite(value)) {
      return value * scale;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<double> ParseBandwidth(const std::string& text) {
  if (std::optional<double> v =
          ParseWithUnit(text, {{"gbit", 1e9 / 8}, {"mbit", 1e6 / 8}, {"kbit", 1e3 / 8}});
      v.has_value() && *v > 0) {
    return *v;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("bandwidth \"", text, "\": use a number with gbit, mbit or kbit (e.g. 1gbit)"));
}

absl::StatusOr<double> ParseLatency(const std::string& text) {
  if (text == "0") return 0.0;
  if (std::optional<double> v = ParseWithUnit(text, {{"ms", 1.0}, {"us", 1e-3}}); v.has_value()) {
    return *v;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("latency \"", text, "\": use a number with ms or us (e.g. 0.2ms), or 0"));
}

std::string FormatBandwidth(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  if (bits >= 1e9) return absl::StrCat(bits / 1e9, "gbit");
  if (bits >= 1e6) return absl::StrCat(bits / 1e6, "mbit");
  return absl::StrCat(bits / 1e3, "kbit");
}

EmulatedNetwork::EmulatedNetwork(const EmulatedNetworkOptions& options) : options_(options) {
  static std::atomic<int> networks{0};
  prefix_ = absl::StrCat(kNamespacePrefix, ::getpid(), "-", networks++);
}

EmulatedNetwork::~EmulatedNetwork() {
  absl::Status s = Destroy();
  if (!s.ok()) LogWarning("netem: cleanup: %s", std::string(s.message()).c_str());
}

std::vector<std::string> EmulatedNetwork::ExistingNamespaces() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kNamespaceDir, ec)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, kNamespacePrefix)) names.push_back(name);
  }
  return names;
}

std::string EmulatedNetwork::host_address(int host) const {
  return absl::StrCat("198.18.0.", host + 1);
}

std::string EmulatedNetwork::namespace_name(int host) const {
  return absl::StrCat(prefix_, "-h", host);
}

std::string EmulatedNetwork::namespace_path(int host) const {
  return absl::StrCat(kNamespaceDir, "/", namespace_name(host));
}

std::string EmulatedNetwork::switch_namespace() const { return prefix_ + "-sw"; }

absl::StatusOr<std::unique_ptr<EmulatedNetwork>> EmulatedNetwork::Create(
    const EmulatedNetworkOptions& options) {
  if (options.hosts < 1 || options.hosts > kMaxHosts) {
    return absl::InvalidArgumentError(
        absl::StrCat("an emulated network has 1 to ", kMaxHosts, " hosts, not ", options.hosts));
  }
  if (!(options.bytes_per_second > 0) || !(options.latency_ms >= 0)) {
    return absl::InvalidArgumentError("an emulated link needs a rate > 0 and a latency >= 0");
  }
  if (::geteuid() != 0) {
    return absl::FailedPreconditionError("emulated networks need root (network namespaces and tc)");
  }
  RemoveStaleNamespaces();
  std::unique_ptr<EmulatedNetwork> net(new EmulatedNetwork(options));
  absl::Status built = net->Build();
  if (!built.ok()) {
    (void)net->Destroy();
    if (absl::IsUnimplemented(built)) return built;
    return absl::FailedPreconditionError(
        absl::StrCat("cannot build the emulated network: ", built.message()));
  }
  return net;
}

// The largest packet a token bucket is handed, as tc counts it: a 64 KiB
// segment-offload packet (the interfaces' gso_max_size and gro_max_size)
// with the headers of each of its segments (up to 48; tc counts every
// segment's). The bucket's burst must hold it. A bucket whose burst is
// smaller splits such packets as they arrive, but one made smaller by a
// rate change cannot send a larger packet it queued before: it would wait
// for tokens it can never hold, and the link would stop.
constexpr int64_t kLargestPacketBytes = 64 * 1024 + 48 * 128;

// The tc command that adds (`verb` "add") or changes ("change") the rate
// limit of `device` in namespace `ns`: a token bucket whose burst holds
// ~1 ms of traffic (at least the largest packet), so short bursts pass as
// on a switch port.
static std::vector<std::string> TokenBucketCommand(const std::string& verb, const std::string& ns,
                                                   const std::string& device,
                                                   double bytes_per_second) {
  const int64_t burst =
      std::max<int64_t>(kLargestPacketBytes, static_cast<int64_t>(bytes_per_second / 1000));
  return {"tc",
          "-n",
          ns,
          "qdisc",
          verb,
          "dev",
          device,
          "root",
          "handle",
          "1:",
          "tbf",
          "rate",
          absl::StrCat(static_cast<int64_t>(bytes_per_second * 8), "bit"),
          "burst",
          std::to_string(burst),
          "latency",
          "100ms"};
}

absl::Status EmulatedNetwork::Shape(const std::string& ns, const std::string& device) {
  STRATA_RETURN_IF_ERROR(RunTool(TokenBucketCommand("add", ns, device, options_.bytes_per_second)));
  if (options_.latency_ms > 0) {
    // Each packet crosses two shaped ports (sender's and receiver's), each
    // adding half of the one-way latency.
    absl::Status delayed = RunTool(
        {"tc", "-n", ns, "qdisc", "add", "dev", device, "parent", "1:1", "handle", "10:", "netem",
         "delay", absl::StrCat(options_.latency_ms * 500.0, "us"), "limit", "100000"});
    if (!delayed.ok() && absl::StrContains(delayed.message(), "qdisc kind is unknown")) {
      return absl::UnimplementedError(
          "this kernel has no netem qdisc (CONFIG_NET_SCH_NETEM), so latency cannot be "
          "emulated here; run with latency 0 (rate shaping works without netem)");
    }
    STRATA_RETURN_IF_ERROR(delayed);
  }
  return absl::OkStatus();
}

absl::Status EmulatedNetwork::SetRate(double bytes_per_second) {
  if (!(bytes_per_second > 0)) {
    return absl::InvalidArgumentError("an emulated link needs a rate > 0");
  }
  const std::string sw = switch_namespace();
  for (int h = 0; h < options_.hosts; ++h) {
    STRATA_RETURN_IF_ERROR(
        RunTool(TokenBucketCommand("change", namespace_name(h), "eth0", bytes_per_second)));
    STRATA_RETURN_IF_ERROR(
        RunTool(TokenBucketCommand("change", sw, absl::StrCat("p", h), bytes_per_second)));
  }
  options_.bytes_per_second = bytes_per_second;
  return absl::OkStatus();
}

absl::Status EmulatedNetwork::Build() {
  const std::string sw = switch_namespace();
  STRATA_RETURN_IF_ERROR(RunTool({"ip", "netns", "add", sw}));
  created_.push_back(sw);
  STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", sw, "link", "add", "br0", "type", "bridge"}));
  STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", sw, "link", "set", "br0", "up"}));
  for (int h = 0; h < options_.hosts; ++h) {
    const std::string ns = namespace_name(h);
    const std::string port = absl::StrCat("p", h);
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "netns", "add", ns}));
    created_.push_back(ns);
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", ns, "link", "set", "lo", "up"}));
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", sw, "link", "add", port, "type", "veth", "peer",
                                    "name", "eth0", "netns", ns}));
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", sw, "link", "set", port, "master", "br0"}));
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", sw, "link", "set", port, "up"}));
    STRATA_RETURN_IF_ERROR(
        RunTool({"ip", "-n", ns, "addr", "add", host_address(h) + "/15", "dev", "eth0"}));
    STRATA_RETURN_IF_ERROR(RunTool({"ip", "-n", ns, "link", "set", "eth0", "up"}));
    STRATA_RETURN_IF_ERROR(Shape(ns, "eth0"));  // what the host sends
    STRATA_RETURN_IF_ERROR(Shape(sw, port));    // what the host receives
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EmulatedNetwork>> EmulateOrFallBack(const std::string& bandwidth,
                                                                   const std::string& latency,
                                                                   int hosts, std::string* why) {
  EmulatedNetworkOptions o;
  o.hosts = hosts;
  STRATA_ASSIGN_OR_RETURN(o.bytes_per_second, ParseBandwidth(bandwidth));
  STRATA_ASSIGN_OR_RETURN(o.latency_ms, ParseLatency(latency));
  absl::StatusOr<std::unique_ptr<EmulatedNetwork>> network = EmulatedNetwork::Create(o);
  if (absl::IsFailedPrecondition(network.status())) {
    *why = std::string(network.status().message());
    return std::unique_ptr<EmulatedNetwork>();
  }
  return network;
}

absl::Status EmulatedNetwork::Destroy() {
  absl::Status first;
  // Hosts first, the switch last: deleting a namespace deletes its veth
  // ends and with them their peers and qdiscs.
  while (!created_.empty()) {
    absl::Status s = RunTool({"ip", "netns", "delete", created_.back()});
    if (!s.ok() && first.ok()) first = s;
    created_.pop_back();
  }
  return first;
}

}  // namespace strata
