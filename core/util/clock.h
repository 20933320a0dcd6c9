// The one clock for timing steps, transfers and benchmarks.
#ifndef STRATA_CORE_UTIL_CLOCK_H_
#define STRATA_CORE_UTIL_CLOCK_H_

#include <chrono>

#include "absl/time/time.h"

namespace strata {

// Seconds on the monotonic clock (steady: never jumps with wall-clock time).
inline double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Now on the monotonic clock as an absl::Time, for deadlines and silences
// that must not move when the wall clock is stepped (liveness, timeouts):
// differences and comparisons are right, the date is not (it counts from an
// arbitrary start). Never compare it with absl::Now(), and never hand it
// to absl's *WithDeadline waits, which read the wall clock (give those a
// timeout).
inline absl::Time MonotonicNow() {
  return absl::UnixEpoch() + absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_CLOCK_H_
