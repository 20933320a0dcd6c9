// ShmRegion: a shared-memory region of fixed-size slots that carries
// tensor chunks between a worker and a server on the same host instead of
// their socket (the socket or lane still carries every header).
//
// The worker creates it as an anonymous memory file (memfd) sealed against
// shrinking and growing, and hands the server its descriptor over the
// lane (core/net/lane_socket.h), so no name exists that another process
// could open or guess, nothing is left behind after a crash, and the
// server maps only memory that cannot shrink under it (a mapping whose
// file shrinks faults on access: SIGBUS). Map() checks the seals, the size
// and the layout before mapping.
//
// Layout: one 4 KiB header page (magic, slot count, slot bytes), then
// `slots` slots of `slot_bytes` bytes each.
//
// "Co-located" is decided by ColocationId(): the host name and the network
// namespace. Processes in different namespaces (an emulated cluster
// network) never share memory, so the emulated links carry their traffic.
#ifndef STRATA_CORE_NET_SHM_REGION_H_
#define STRATA_CORE_NET_SHM_REGION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace strata {

class ShmRegion {
 public:
  // Creates a sealed region. Unavailable when memory cannot be had.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Create(uint32_t slots, uint64_t slot_bytes);
  // Maps the region behind `fd` (a duplicate is kept open while mapped).
  // FailedPrecondition, naming the problem, when it is not sealed against
  // shrinking, or its size or layout differs from what was announced.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Map(int fd, uint32_t slots,
                                                        uint64_t slot_bytes);
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // The region's descriptor, to pass to the peer.
  int fd() const { return fd_; }
  uint32_t slots() const { return slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  float* slot(uint32_t i) const;

 private:
  ShmRegion(int fd, uint32_t slots, uint64_t slot_bytes, void* base);

  int fd_;
  uint32_t slots_;
  uint64_t slot_bytes_;
  void* base_;
};

// The slots of a worker's region, handed out for requests in flight.
class ShmSlots {
 public:
  explicit ShmSlots(uint32_t slots);
  // A free slot, or nullopt when all are in flight (the request then goes
  // as data frames).
  std::optional<uint32_t> Acquire();
  void Release(uint32_t slot);

 private:
  std::vector<uint32_t> free_;
};

// "host/net:[inode]": equal for two processes exactly when they share the
// host and the network namespace.
std::string ColocationId();

}  // namespace strata

#endif  // STRATA_CORE_NET_SHM_REGION_H_
