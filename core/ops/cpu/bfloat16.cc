#include "core/ops/cpu/bfloat16.h"

#include <cstring>

namespace strata {

void ToBfloat16(const float* in, uint16_t* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &in[i], sizeof(bits));
    const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
    // Round to nearest even: add 0x7fff plus the lowest kept bit.
    const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    out[i] = static_cast<uint16_t>(nan ? (bits >> 16) | 0x0040u : rounded >> 16);
  }
}

void FromBfloat16(const uint16_t* in, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(&out[i], &bits, sizeof(bits));
  }
}

}  // namespace strata
