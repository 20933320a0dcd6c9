// GuardedAllocator: host memory that faults on every access until opened.
//
// Each block gets pages of its own (mmap), PROT_NONE from the moment it is
// allocated. OpenPages makes the pages under a byte range readable and
// writable, ClosePages takes that back. The checking device
// (core/ops/checking_backend.h) keeps its tensors here and opens only the
// operands of the op it is running, so code that touches a "device"
// tensor from the host (a missing Upload or Download) crashes at once on
// a machine without a GPU, as it would read garbage with one.
//
//   GuardedAllocator& a = GuardedAllocator::Instance();
//   void* p = a.Allocate(n);     // any access faults
//   GuardedAllocator::OpenPages(p, n);
//   std::memset(p, 0, n);        // fine
//   GuardedAllocator::ClosePages(p, n);
//
// Thread-safe; opening is not counted, so callers serialise overlapping
// opens (the checking backend holds one lock across an op).
#ifndef STRATA_CORE_TENSOR_GUARDED_ALLOCATOR_H_
#define STRATA_CORE_TENSOR_GUARDED_ALLOCATOR_H_

#include <cstddef>

#include "core/tensor/allocator.h"

namespace strata {

class GuardedAllocator final : public Allocator {
 public:
  static GuardedAllocator& Instance();
  // Whole pages, PROT_NONE; aborts when the system refuses them.
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  // The bytes of its blocks (whole pages).
  const MemoryUsage& usage() const { return usage_; }

  // Read-write / no access for every page that [ptr, ptr + bytes) touches;
  // the range lies inside one block. Aborts if the kernel refuses.
  static void OpenPages(const void* ptr, size_t bytes);
  static void ClosePages(const void* ptr, size_t bytes);

 private:
  MemoryUsage usage_;
};

}  // namespace strata

#endif  // STRATA_CORE_TENSOR_GUARDED_ALLOCATOR_H_
