#include "core/net/shm_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

constexpr uint64_t kMagic = 0x53545241544153ull;  // "STRATAS"
constexpr size_t kHeaderBytes = 4096;

struct Header {
  uint64_t magic;
  uint64_t token;
  uint64_t slots;
  uint64_t slot_bytes;
};

size_t RegionBytes(uint32_t slots, uint64_t slot_bytes) {
  return kHeaderBytes + static_cast<size_t>(slots) * slot_bytes;
}

std::string Errno() { return std::strerror(errno); }

}  // namespace

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Create(uint32_t slots, uint64_t slot_bytes) {
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  const uint64_t token = (static_cast<uint64_t>(random()) << 32) ^ random() ^ 1;
  const std::string name =
      absl::StrCat("/strata-", ::getpid(), "-", counter.fetch_add(1), "-", token % 100000);
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot create shared memory ", name, ": ", Errno()));
  }
  const size_t bytes = RegionBytes(slots, slot_bytes);
  void* base = MAP_FAILED;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
    base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  const std::string error = Errno();
  ::close(fd);
  if (base == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return absl::UnavailableError(
        absl::StrCat("cannot map ", bytes, " bytes of shared memory ", name, ": ", error));
  }
  auto* header = static_cast<Header*>(base);
  *header = Header{kMagic, token, slots, slot_bytes};
  return std::unique_ptr<ShmRegion>(
      new ShmRegion(name, token, slots, slot_bytes, base, /*linked=*/true));
}

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Open(const std::string& name, uint32_t slots,
                                                           uint64_t slot_bytes, uint64_t token) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is not a shared memory name"));
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open shared memory ", name, ": ", Errno()));
  }
  const size_t bytes = RegionBytes(slots, slot_bytes);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    ::close(fd);
    return absl::FailedPreconditionError(absl::StrCat("shared memory ", name, " holds ", st.st_size,
                                                      " bytes, not the announced ", bytes));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot map shared memory ", name, ": ", Errno()));
  }
  const Header header = *static_cast<const Header*>(base);
  if (header.magic != kMagic || header.token != token || header.slots != slots ||
      header.slot_bytes != slot_bytes) {
    ::munmap(base, bytes);
    return absl::FailedPreconditionError(
        absl::StrCat("shared memory ", name,
                     " is not the announced region (token or layout "
                     "differs)"));
  }
  return std::unique_ptr<ShmRegion>(
      new ShmRegion(name, token, slots, slot_bytes, base, /*linked=*/false));
}

ShmRegion::ShmRegion(std::string name, uint64_t token, uint32_t slots, uint64_t slot_bytes,
                     void* base, bool linked)
    : name_(std::move(name)),
      token_(token),
      slots_(slots),
      slot_bytes_(slot_bytes),
      base_(base),
      linked_(linked) {}

ShmRegion::~ShmRegion() {
  Unlink();
  ::munmap(base_, RegionBytes(slots_, slot_bytes_));
}

void ShmRegion::Unlink() {
  if (!linked_) return;
  ::shm_unlink(name_.c_str());
  linked_ = false;
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
