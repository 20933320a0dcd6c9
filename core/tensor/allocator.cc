#include "core/tensor/allocator.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "core/util/env.h"

namespace strata {
namespace {

class AlignedSystemAllocator final : public Allocator {
 public:
  void* Allocate(size_t bytes) override {
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    void* p = std::aligned_alloc(kTensorAlignment, rounded);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void Deallocate(void* ptr, size_t /*bytes*/) override { std::free(ptr); }
};

}  // namespace

void MemoryUsage::Add(size_t bytes) {
  const uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void MemoryUsage::Remove(size_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }

size_t CachingAllocator::RoundToSizeClass(size_t bytes) {
  if (bytes <= 256) return 256;
  // Round up to a multiple of 1/8 of the highest power of two below `bytes`.
  size_t power = size_t{1} << (63 - __builtin_clzll(bytes - 1));
  size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(Allocator* backing, size_t max_cached_bytes)
    : backing_(backing), max_cached_bytes_(max_cached_bytes) {}

CachingAllocator::~CachingAllocator() { Trim(); }

void* CachingAllocator::Allocate(size_t bytes) {
  const size_t size = RoundToSizeClass(bytes);
  {
    absl::MutexLock lock(&mu_);
    auto it = free_lists_.find(size);
    if (it != free_lists_.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      stats_.cache_hits++;
      stats_.cached_bytes -= size;
      usage_.Add(size);
      return p;
    }
    stats_.system_allocations++;
  }
  void* p = backing_->Allocate(size);
  usage_.Add(size);
  return p;
}

void CachingAllocator::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t size = RoundToSizeClass(bytes);
  usage_.Remove(size);
  {
    absl::MutexLock lock(&mu_);
    if (stats_.cached_bytes + size <= max_cached_bytes_) {
      free_lists_[size].push_back(ptr);
      stats_.cached_bytes += size;
      return;
    }
  }
  backing_->Deallocate(ptr, size);
}

void CachingAllocator::Trim() {
  absl::MutexLock lock(&mu_);
  for (auto& [size, list] : free_lists_) {
    for (void* p : list) backing_->Deallocate(p, size);
    list.clear();
  }
  stats_.cached_bytes = 0;
}

CachingAllocatorStats CachingAllocator::stats() const {
  absl::MutexLock lock(&mu_);
  CachingAllocatorStats stats = stats_;
  stats.in_use_bytes = usage_.in_use();
  stats.peak_in_use_bytes = usage_.peak();
  return stats;
}

Allocator& SystemAllocator() {
  static AlignedSystemAllocator* allocator = new AlignedSystemAllocator();
  return *allocator;
}

Allocator& CpuAllocator() {
  static CachingAllocator* allocator = new CachingAllocator(
      &SystemAllocator(), static_cast<size_t>(EnvInt("STRATA_ALLOC_CACHE_MB", 4096)) << 20);
  return *allocator;
}

}  // namespace strata
