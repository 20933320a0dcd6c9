// bfloat16: the upper half of an IEEE float32 (sign, 8 exponent bits, 7
// mantissa bits), the wire format that halves the bytes of pushes, pulls
// and activations (the wire.format knob).
//
// Contract: ToBfloat16 rounds to nearest, ties to even; a NaN stays a NaN
// (quiet), infinities and zeros keep their sign; values beyond bfloat16's
// range round to infinity, as float32 rounding does. FromBfloat16 is exact.
// Both are single-threaded and vectorised by the compiler: they run on
// communication threads, next to the sends they feed.
#ifndef STRATA_CORE_OPS_CPU_BFLOAT16_H_
#define STRATA_CORE_OPS_CPU_BFLOAT16_H_

#include <cstdint>

namespace strata {

void ToBfloat16(const float* in, uint16_t* out, int64_t n);
void FromBfloat16(const uint16_t* in, float* out, int64_t n);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_BFLOAT16_H_
