// ConfigureFloatingPoint: subnormal results and inputs become zero in the
// thread that set it and in every thread it starts afterwards (x86).
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "core/process/process_setup.h"

namespace strata {
namespace {

// Computed at run time, so the compiler cannot fold them.
float Multiply(volatile float a, volatile float b) { return a * b; }
float Add(volatile float a, volatile float b) { return a + b; }

TEST(FloatingPointTest, SubnormalsAreFlushedHereAndInThreadsStartedLater) {
#if defined(__x86_64__) || defined(__i386__)
  const float smallest_normal = std::numeric_limits<float>::min();  // 1.18e-38
  const float subnormal = smallest_normal / 1024;                   // exact, before the flush
  ASSERT_GT(subnormal, 0.0f);
  ASSERT_GT(Multiply(smallest_normal, 0.5f), 0.0f);  // subnormal results exist until then
  ConfigureFloatingPoint();
  EXPECT_EQ(Multiply(smallest_normal, 0.5f), 0.0f);  // flush to zero
  EXPECT_EQ(Add(subnormal, 0.0f), 0.0f);             // a subnormal input reads as zero
  float in_thread = -1, input_in_thread = -1;
  std::thread([&] {
    in_thread = Multiply(smallest_normal, 0.5f);
    input_in_thread = Add(subnormal, 0.0f);
  }).join();
  EXPECT_EQ(in_thread, 0.0f);
  EXPECT_EQ(input_in_thread, 0.0f);
  EXPECT_EQ(Multiply(2.0f, 3.0f), 6.0f);  // normal numbers are untouched
#else
  GTEST_SKIP() << "flushing subnormals is set only on x86";
#endif
}

}  // namespace
}  // namespace strata
