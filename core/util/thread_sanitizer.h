// Happens-before edges that ThreadSanitizer cannot see for itself: where a
// library built without it (ZeroMQ) hands memory from one thread to
// another through its own lock-free queues. Release on the handing side,
// Acquire on the taking side, both on the same address; outside a TSan
// build both compile to nothing.
//
//   auto* hold = new Tensor(t);
//   TsanRelease(hold);                  // the sending thread made it
//   zmq::message_t m(..., Free, hold);  // ZeroMQ's I/O thread calls Free
//   void Free(void*, void* hint) { TsanAcquire(hint); delete ...; }
#ifndef STRATA_CORE_UTIL_THREAD_SANITIZER_H_
#define STRATA_CORE_UTIL_THREAD_SANITIZER_H_

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace strata {

inline void TsanRelease(void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_release(addr);
#else
  (void)addr;
#endif
}

inline void TsanAcquire(void* addr) {
#if defined(__SANITIZE_THREAD__)
  __tsan_acquire(addr);
#else
  (void)addr;
#endif
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_THREAD_SANITIZER_H_
