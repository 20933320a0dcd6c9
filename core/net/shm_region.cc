#include "core/net/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

constexpr uint64_t kMagic = 0x53545241544153ull;  // "STRATAS"
constexpr size_t kHeaderBytes = 4096;
// What a region's creator seals: its size (both ways), and the seals.
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

struct Header {
  uint64_t magic;
  uint64_t slots;
  uint64_t slot_bytes;
};

size_t RegionBytes(uint32_t slots, uint64_t slot_bytes) {
  return kHeaderBytes + static_cast<size_t>(slots) * slot_bytes;
}

std::string Errno() { return std::strerror(errno); }

}  // namespace

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Create(uint32_t slots, uint64_t slot_bytes) {
  const int fd = ::memfd_create("strata-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot create shared memory: ", Errno()));
  }
  const size_t bytes = RegionBytes(slots, slot_bytes);
  void* base = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0 && ::fcntl(fd, F_ADD_SEALS, kSeals) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  if (base == MAP_FAILED) {
    const std::string error = Errno();
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot make ", bytes, " bytes of sealed shared memory: ", error));
  }
  *static_cast<Header*>(base) = Header{kMagic, slots, slot_bytes};
  return std::unique_ptr<ShmRegion>(new ShmRegion(fd, slots, slot_bytes, base));
}

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Map(int fd, uint32_t slots,
                                                          uint64_t slot_bytes) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return absl::FailedPreconditionError(
        seals < 0 ? absl::StrCat("the shared memory offered is not a sealable memory file (",
                                 Errno(), ")")
                  : "the shared memory offered is not sealed against shrinking");
  }
  const size_t bytes = RegionBytes(slots, slot_bytes);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the shared memory offered holds ", st.st_size, " bytes, not the announced ", bytes));
  }
  const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return absl::UnavailableError(absl::StrCat("cannot keep shared memory: ", Errno()));
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, own, 0);
  if (base == MAP_FAILED) {
    const std::string error = Errno();
    ::close(own);
    return absl::FailedPreconditionError(absl::StrCat("cannot map the shared memory: ", error));
  }
  const Header header = *static_cast<const Header*>(base);
  if (header.magic != kMagic || header.slots != slots || header.slot_bytes != slot_bytes) {
    ::munmap(base, bytes);
    ::close(own);
    return absl::FailedPreconditionError(
        "the shared memory offered is not the announced region (its layout differs)");
  }
  return std::unique_ptr<ShmRegion>(new ShmRegion(own, slots, slot_bytes, base));
}

ShmRegion::ShmRegion(int fd, uint32_t slots, uint64_t slot_bytes, void* base)
    : fd_(fd), slots_(slots), slot_bytes_(slot_bytes), base_(base) {}

ShmRegion::~ShmRegion() {
  ::munmap(base_, RegionBytes(slots_, slot_bytes_));
  ::close(fd_);
}

float* ShmRegion::slot(uint32_t i) const {
  return reinterpret_cast<float*>(static_cast<char*>(base_) + kHeaderBytes + i * slot_bytes_);
}

ShmSlots::ShmSlots(uint32_t slots) {
  for (uint32_t i = slots; i > 0; --i) free_.push_back(i - 1);
}

std::optional<uint32_t> ShmSlots::Acquire() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void ShmSlots::Release(uint32_t slot) { free_.push_back(slot); }

std::string ColocationId() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  char ns[256] = {};
  const ssize_t n = ::readlink("/proc/self/ns/net", ns, sizeof(ns) - 1);
  return absl::StrCat(host, "/", n > 0 ? std::string(ns, static_cast<size_t>(n)) : "?");
}

}  // namespace strata
