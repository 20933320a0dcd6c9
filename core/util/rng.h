// Deterministic random numbers: the same seed gives the same stream on every
// machine (unlike std::normal_distribution, whose output is library-defined).
#ifndef STRATA_CORE_UTIL_RNG_H_
#define STRATA_CORE_UTIL_RNG_H_

#include <cmath>
#include <cstdint>

namespace strata {

// SplitMix64 generator. Not thread-safe; give each thread its own.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t NextU64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) { return lo + static_cast<float>(Uniform()) * (hi - lo); }
  // Uniform integer in [0, n).
  uint64_t Below(uint64_t n) { return NextU64() % n; }
  // Standard normal (Box-Muller).
  float Normal() {
    double u1 = Uniform();
    double u2 = Uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }

 private:
  uint64_t state_;
};

// A seed derived from `seed` and a stream id, so independent streams
// (per layer, per worker) do not overlap.
inline uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  Rng r(seed ^ (stream * 0xD1B54A32D192ED03ULL));
  return r.NextU64();
}

}  // namespace strata

#endif  // STRATA_CORE_UTIL_RNG_H_
