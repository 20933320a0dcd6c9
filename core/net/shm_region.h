// ShmRegion: a POSIX shared-memory region of fixed-size slots that carries
// tensor chunks between a worker and a server on the same host instead of
// their socket (the socket still carries every header). The worker creates
// it, the server opens it by name after checking a random token written in
// its header page, and the worker then removes the name: the memory lives
// while either maps it, and nothing is left in /dev/shm after a crash.
//
// Layout: one 4 KiB header page (magic, token, slot count, slot bytes), then
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
  // Creates a region with a fresh name and a random token. Unavailable when
  // shared memory cannot be had (no /dev/shm, no space).
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Create(uint32_t slots, uint64_t slot_bytes);
  // Maps the region `name`. FailedPrecondition, naming the problem, when it
  // does not exist here, or its size or token differs from what was announced.
  static absl::StatusOr<std::unique_ptr<ShmRegion>> Open(const std::string& name, uint32_t slots,
                                                         uint64_t slot_bytes, uint64_t token);
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // Removes the name (the creator, once the peer has it mapped). Idempotent.
  void Unlink();

  const std::string& name() const { return name_; }
  uint64_t token() const { return token_; }
  uint32_t slots() const { return slots_; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  float* slot(uint32_t i) const;

 private:
  ShmRegion(std::string name, uint64_t token, uint32_t slots, uint64_t slot_bytes, void* base,
            bool linked);

  std::string name_;
  uint64_t token_;
  uint32_t slots_;
  uint64_t slot_bytes_;
  void* base_;
  bool linked_;
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
