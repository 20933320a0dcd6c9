#include "server/shared_memory_peers.h"

#include "absl/strings/str_cat.h"
#include "core/net/ps_wire.h"
#include "core/status.h"

namespace strata {
namespace {

constexpr uint32_t kMaxSlots = 4096;
constexpr uint64_t kMaxSlotBytes = uint64_t{64} << 20;

}  // namespace

absl::Status SharedMemoryPeers::Attach(const IncomingMessage& message) {
  const auto offer = BodyOf<wire::ps::Body>(message.header());
  const std::string theirs = offer.getShmHost().cStr();
  static const std::string ours = ColocationId();  // fixed for the process's life
  if (theirs != ours) {
    return absl::FailedPreconditionError(
        absl::StrCat("no shared memory: the sender runs on ", theirs.empty() ? "?" : theirs,
                     ", this server on ", ours, " (another host or network namespace)"));
  }
  const uint32_t slots = offer.getShmSlotCount();
  const uint64_t slot_bytes = offer.getShmSlotBytes();
  if (slots < 1 || slots > kMaxSlots || slot_bytes < 4 || slot_bytes > kMaxSlotBytes ||
      slot_bytes % 4 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared memory of ", slots, " slots of ", slot_bytes, " bytes: a region has 1 to ",
        kMaxSlots, " slots of 4 bytes to ", kMaxSlotBytes, " bytes (a multiple of 4)"));
  }
  if (message.descriptor() < 0) {
    return absl::FailedPreconditionError(
        "no shared memory: a region comes as a descriptor on a shared memory lane (protocol "
        "2.5), and this offer brought none");
  }
  if (regions_.count(message.identity()) != 0) {
    return absl::AlreadyExistsError(
        "this connection has attached a shared memory region already; it keeps that one");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ShmRegion> region,
                          ShmRegion::Map(message.descriptor(), slots, slot_bytes));
  regions_[message.identity()] = std::move(region);
  return absl::OkStatus();
}

absl::StatusOr<SharedMemoryPeers::Placement> SharedMemoryPeers::Resolve(
    const IncomingMessage& message, const std::vector<Chunk>& chunks) const {
  const auto h = message.header();
  const auto slots = BodyOf<wire::ps::Body>(h).getShmSlots();
  Placement placement;
  if (slots.size() == 0) return placement;
  auto it = regions_.find(message.identity());
  if (it == regions_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        KindName(TypeOf(h)), " names shared memory slots, but its sender attached none"));
  }
  if (slots.size() != chunks.size() || message.num_frames() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        KindName(TypeOf(h)), " names ", slots.size(), " shared memory slots and ",
        message.num_frames(), " data frames for ", chunks.size(), " slices (one slot each)"));
  }
  placement.region = it->second;
  const ShmRegion& region = *placement.region;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const uint32_t slot = slots[static_cast<unsigned>(i)];
    if (slot >= region.slots()) {
      return absl::InvalidArgumentError(absl::StrCat(KindName(TypeOf(h)), ": shared memory slot ",
                                                     slot, " is outside [0, ", region.slots(),
                                                     ")"));
    }
    if (chunks[i].length * sizeof(float) > region.slot_bytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          KindName(TypeOf(h)), " of key ", chunks[i].key, ": ", chunks[i].length * sizeof(float),
          " bytes do not fit a shared memory slot of ", region.slot_bytes()));
    }
    placement.slots.push_back(slot);
  }
  return placement;
}

}  // namespace strata
