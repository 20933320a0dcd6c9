// Traffic accounting: bytes a process sent to and received from each kind
// of peer, reported once at the end as one line that the launcher sums:
//
//   [traffic] {"process":"worker 0","steps":937,"sent":{"server":...,"conv":0,"fc":...},
//              "received":{...},"times":{"compute":...,"network":...,"wall":...}}
//
// Bytes are ZeroMQ payload (headers and tensor frames); TCP/IP framing is
// not counted.
#ifndef STRATA_CORE_NET_TRAFFIC_H_
#define STRATA_CORE_NET_TRAFFIC_H_

#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/net/protocol.capnp.h"

namespace strata {

enum class PeerKind { kServer = 0, kConv = 1, kFc = 2 };

// The kind of peer a node of `role` is (launchers and tools count as servers'
// clients: conv).
PeerKind PeerKindOf(wire::Role role);
const char* PeerKindName(PeerKind kind);

// Where a worker's iterations went, summed over its run, in seconds. The
// first iteration (start-up: kernel creation, peers joining) is left out.
struct StepTimes {
  int64_t iterations = 0;  // iterations timed
  double compute = 0;      // forward, backward, local updates
  double network = 0;      // blocked on the network: pushes, pulls, activation exchange
  double wall = 0;         // whole iterations (the rest is input loading and idling)

  void Add(double compute_seconds, double network_seconds, double wall_seconds) {
    ++iterations;
    compute += compute_seconds;
    network += network_seconds;
    wall += wall_seconds;
  }
};

struct TrafficReport {
  std::string process;  // "server 0", "worker 1", "fc worker 0"
  int64_t steps = 0;
  std::array<uint64_t, 3> sent{};
  std::array<uint64_t, 3> received{};
  StepTimes times;  // workers time their iterations; servers leave this empty

  void AddSent(PeerKind peer, uint64_t bytes) { sent[static_cast<int>(peer)] += bytes; }
  void AddReceived(PeerKind peer, uint64_t bytes) { received[static_cast<int>(peer)] += bytes; }
  nlohmann::json ToJson() const;
  // Prints the "[traffic] {...}" line on stdout.
  void Print() const;
};

inline constexpr char kTrafficLinePrefix[] = "[traffic] ";

}  // namespace strata

#endif  // STRATA_CORE_NET_TRAFFIC_H_
