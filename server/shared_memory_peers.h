// SharedMemoryPeers: the shared-memory regions of the workers on this
// server's host and network namespace (core/net/shm_region.h), by their
// connection. A push, init or pull that names slots carries (or receives)
// its floats there instead of in data frames; every slot it names is
// checked against the region and the chunk's size.
#ifndef STRATA_SERVER_SHARED_MEMORY_PEERS_H_
#define STRATA_SERVER_SHARED_MEMORY_PEERS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/net/partition_plan.h"
#include "core/net/shm_region.h"
#include "core/net/transport.h"

namespace strata {

class SharedMemoryPeers {
 public:
  // Maps the region a shmAttach message brings (its descriptor, passed on
  // a lane), for its sender's connection. FailedPrecondition when the
  // sender is on another host or network namespace, or brought no
  // descriptor, or the region is not the announced one or not sealed
  // against shrinking; InvalidArgument for a layout past the limits;
  // AlreadyExists when the connection attached one before (it keeps it).
  absl::Status Attach(const IncomingMessage& message);

  // Where each chunk's floats lie for `message`: in the slots it names, or
  // (region null) in its data frames when it names none. InvalidArgument
  // naming the problem for slots without an attached region, a slot count
  // other than the chunk count, a slot outside the region, or a chunk
  // larger than a slot.
  struct Placement {
    std::shared_ptr<ShmRegion> region;  // keeps the memory mapped while in use
    std::vector<uint32_t> slots;        // slice i's floats: region->slot(slots[i])
    // The floats of slice i of `message`: its slot, or its data frame.
    const float* SliceData(const IncomingMessage& message, size_t i) const {
      return region != nullptr ? region->slot(slots[i])
                               : static_cast<const float*>(message.frame_data(i));
    }
  };
  absl::StatusOr<Placement> Resolve(const IncomingMessage& message,
                                    const std::vector<Chunk>& chunks) const;

  // Drops the region of a connection that has finished.
  void Forget(const std::string& identity) { regions_.erase(identity); }

 private:
  std::map<std::string, std::shared_ptr<ShmRegion>> regions_;
};

}  // namespace strata

#endif  // STRATA_SERVER_SHARED_MEMORY_PEERS_H_
