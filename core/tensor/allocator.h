// Memory allocators for tensor and message buffers.
//
// glibc's malloc hands big blocks back to the OS on free and page-faults them
// in again on the next use; for a training step that reuses the same buffer
// sizes every iteration that costs more than the math. CachingAllocator keeps
// freed blocks in per-size free lists and hands them out again, so steady-state
// training allocates nothing from the OS.
//
//   Allocator& a = CpuAllocator();
//   void* p = a.Allocate(1 << 20);   // 64-byte aligned
//   a.Deallocate(p, 1 << 20);        // cached, not returned to the OS
#ifndef STRATA_CORE_TENSOR_ALLOCATOR_H_
#define STRATA_CORE_TENSOR_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace strata {

inline constexpr size_t kTensorAlignment = 64;

// Interface of a device memory allocator. Implementations are thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns a block of at least `bytes` bytes, kTensorAlignment-aligned.
  // Aborts when the system is out of memory (like operator new).
  virtual void* Allocate(size_t bytes) = 0;
  // Returns a block obtained from Allocate with the same `bytes`.
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
};

// Bytes an allocator has handed out and not taken back, and the most it
// ever had out at once. Thread-safe.
class MemoryUsage {
 public:
  void Add(size_t bytes);
  void Remove(size_t bytes);
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> peak_{0};
};

struct CachingAllocatorStats {
  uint64_t system_allocations = 0;  // blocks requested from the underlying allocator
  uint64_t cache_hits = 0;          // requests served from the cache
  uint64_t cached_bytes = 0;        // bytes currently held in free lists
  uint64_t in_use_bytes = 0;        // bytes in blocks handed out (size classes)
  uint64_t peak_in_use_bytes = 0;   // the most in_use_bytes ever was
};

// Caches freed blocks by size class (sizes rounded up to 1/8 of a power of
// two, so at most 12.5% is wasted) up to `max_cached_bytes`; beyond that a
// freed block goes back to `backing`. Thread-safe.
class CachingAllocator final : public Allocator {
 public:
  CachingAllocator(Allocator* backing, size_t max_cached_bytes);
  ~CachingAllocator() override;
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  // Releases every cached block to the backing allocator.
  void Trim();
  CachingAllocatorStats stats() const;

  // The size class that a request of `bytes` is served from.
  static size_t RoundToSizeClass(size_t bytes);

 private:
  Allocator* backing_;
  const size_t max_cached_bytes_;
  mutable absl::Mutex mu_;
  std::map<size_t, std::vector<void*>> free_lists_ ABSL_GUARDED_BY(mu_);
  CachingAllocatorStats stats_ ABSL_GUARDED_BY(mu_);
  MemoryUsage usage_;
};

// Plain aligned allocation from the C library (no caching).
Allocator& SystemAllocator();

// The process-wide CPU allocator that tensors use: a CachingAllocator over
// SystemAllocator with a cap of STRATA_ALLOC_CACHE_MB (default 4096) MiB.
Allocator& CpuAllocator();

}  // namespace strata

#endif  // STRATA_CORE_TENSOR_ALLOCATOR_H_
