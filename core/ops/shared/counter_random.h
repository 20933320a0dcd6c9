// Counter-based random numbers: a draw is a pure function of (seed, stream,
// index), so a kernel on any device, in any order and with any number of
// threads, draws the same values, and a seed gives the same dropout mask on
// every run and every backend.
#ifndef STRATA_CORE_OPS_SHARED_COUNTER_RANDOM_H_
#define STRATA_CORE_OPS_SHARED_COUNTER_RANDOM_H_

#include <cstdint>

#include "core/ops/shared/host_device.h"

namespace strata {

// 64 well-mixed bits of (seed, stream, index): SplitMix64's finaliser over
// the three words combined with distinct odd multipliers.
STRATA_HOST_DEVICE inline uint64_t CounterBits(uint64_t seed, uint64_t stream, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + stream * 0xD1B54A32D192ED03ull +
               index * 0x8CB92BA72F3D8DD7ull + 0x2545F4914F6CDD1Dull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 bits of resolution (every value a float holds exactly).
STRATA_HOST_DEVICE inline float CounterUniform(uint64_t seed, uint64_t stream, uint64_t index) {
  return static_cast<float>(CounterBits(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

// Inverted dropout's mask value of element `index`: 0 with probability p,
// else 1/(1-p).
STRATA_HOST_DEVICE inline float DropoutMaskValue(uint64_t seed, uint64_t stream, uint64_t index,
                                                 float p) {
  return CounterUniform(seed, stream, index) < p ? 0.0f : 1.0f / (1.0f - p);
}

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_COUNTER_RANDOM_H_
