// The wire's bfloat16 conversions (core/ops/cpu/bfloat16.h): rounding to
// nearest even, the special values, exact widening.
#include "core/ops/cpu/bfloat16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace strata {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

TEST(Bfloat16Test, RoundsToNearestEvenAndKeepsSpecialValues) {
  const std::vector<float> in = {
      1.0f,
      FromBits(0x3f808000u),  // halfway between 0x3f80 and 0x3f81: to the even 0x3f80
      FromBits(0x3f818000u),  // halfway between 0x3f81 and 0x3f82: to the even 0x3f82
      FromBits(0x3f808001u),  // just above halfway: up
      -2.5f,
      -0.0f,
      std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::max(),  // beyond bfloat16's largest: infinity
      std::numeric_limits<float>::quiet_NaN(),
      FromBits(0x7f800001u),  // a NaN whose payload sits in the dropped bits
  };
  std::vector<uint16_t> out(in.size());
  ToBfloat16(in.data(), out.data(), static_cast<int64_t>(in.size()));
  EXPECT_EQ(out[0], 0x3f80);
  EXPECT_EQ(out[1], 0x3f80);
  EXPECT_EQ(out[2], 0x3f82);
  EXPECT_EQ(out[3], 0x3f81);
  EXPECT_EQ(out[4], 0xc020);
  EXPECT_EQ(out[5], 0x8000);
  EXPECT_EQ(out[6], 0x7f80);
  EXPECT_EQ(out[7], 0x7f80);
  std::vector<float> back(in.size());
  FromBfloat16(out.data(), back.data(), static_cast<int64_t>(out.size()));
  EXPECT_TRUE(std::isnan(back[8]));
  EXPECT_TRUE(std::isnan(back[9]));  // not rounded into an infinity
  EXPECT_EQ(back[4], -2.5f);
  EXPECT_TRUE(std::signbit(back[5]));
}

TEST(Bfloat16Test, EveryBfloat16ValueWidensExactlyAndNarrowsBackToItself) {
  std::vector<uint16_t> all(1 << 16);
  for (uint32_t b = 0; b < all.size(); ++b) all[b] = static_cast<uint16_t>(b);
  std::vector<float> wide(all.size());
  FromBfloat16(all.data(), wide.data(), static_cast<int64_t>(all.size()));
  std::vector<uint16_t> again(all.size());
  ToBfloat16(wide.data(), again.data(), static_cast<int64_t>(wide.size()));
  for (uint32_t b = 0; b < all.size(); ++b) {
    uint32_t bits;
    std::memcpy(&bits, &wide[b], sizeof(bits));
    ASSERT_EQ(bits, b << 16) << b;
    if ((b & 0x7fffu) > 0x7f80u) {
      ASSERT_EQ(again[b], b | 0x0040u) << b;  // NaNs come back quiet
    } else {
      ASSERT_EQ(again[b], b) << b;
    }
  }
  // Relative error of a rounded value: at most 2^-8.
  const float x = 3.14159265f;
  uint16_t narrow;
  float wide_x;
  ToBfloat16(&x, &narrow, 1);
  FromBfloat16(&narrow, &wide_x, 1);
  EXPECT_LE(std::abs(wide_x - x) / x, 1.0f / 256);
}

}  // namespace
}  // namespace strata
