// The one clock for timing steps, transfers and benchmarks.
#ifndef STRATA_CORE_UTIL_CLOCK_H_
#define STRATA_CORE_UTIL_CLOCK_H_

#include <chrono>

namespace strata {

// Seconds on the monotonic clock (steady: never jumps with wall-clock time).
inline double MonotonicSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_CLOCK_H_
