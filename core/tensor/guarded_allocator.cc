#include "core/tensor/guarded_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/status.h"

namespace strata {
namespace {

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

size_t RoundUpToPages(size_t bytes) {
  const size_t page = PageSize();
  return (bytes + page - 1) / page * page;
}

void Protect(const void* ptr, size_t bytes, int protection) {
  if (bytes == 0) return;
  const uintptr_t page = PageSize();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(ptr) + bytes + page - 1) / page * page;
  const int rc = mprotect(reinterpret_cast<void*>(begin), end - begin, protection);
  STRATA_CHECK(rc == 0, "mprotect of guarded memory failed: ", std::strerror(errno));
}

}  // namespace

GuardedAllocator& GuardedAllocator::Instance() {
  static GuardedAllocator* allocator = new GuardedAllocator();
  return *allocator;
}

void* GuardedAllocator::Allocate(size_t bytes) {
  void* p = mmap(nullptr, RoundUpToPages(bytes), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  STRATA_CHECK(p != MAP_FAILED, "guarded allocation of ", bytes,
               " bytes failed: ", std::strerror(errno));
  usage_.Add(RoundUpToPages(bytes));
  return p;
}

void GuardedAllocator::Deallocate(void* ptr, size_t bytes) {
  munmap(ptr, RoundUpToPages(bytes));
  usage_.Remove(RoundUpToPages(bytes));
}

void GuardedAllocator::OpenPages(const void* ptr, size_t bytes) {
  Protect(ptr, bytes, PROT_READ | PROT_WRITE);
}

void GuardedAllocator::ClosePages(const void* ptr, size_t bytes) { Protect(ptr, bytes, PROT_NONE); }

}  // namespace strata
