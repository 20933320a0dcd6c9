// Traffic accounting: bytes a process sent to and received from each kind
// of peer, reported once at the end as one line that the launcher sums:
//
//   [traffic] {"process":"worker 0","steps":937,"sent":{"server":...,"conv":0,"fc":...},
//              "received":{...}}
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

struct TrafficReport {
  std::string process;  // "server 0", "worker 1", "fc worker 0"
  int64_t steps = 0;
  std::array<uint64_t, 3> sent{};
  std::array<uint64_t, 3> received{};

  void AddSent(PeerKind peer, uint64_t bytes) { sent[static_cast<int>(peer)] += bytes; }
  void AddReceived(PeerKind peer, uint64_t bytes) { received[static_cast<int>(peer)] += bytes; }
  nlohmann::json ToJson() const;
  // Prints the "[traffic] {...}" line on stdout.
  void Print() const;
};

inline constexpr char kTrafficLinePrefix[] = "[traffic] ";

}  // namespace strata

#endif  // STRATA_CORE_NET_TRAFFIC_H_
