// RoundTrip: the resend timeout from answer times (RFC 6298's estimator),
// its bounds, and the back-off of a request sent again.
#include "core/net/round_trip.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using absl::Milliseconds;
using absl::Seconds;

TEST(RoundTripTest, BeforeAnyAnswerTheTimeoutIsTheInitialOneDoubledPerSend) {
  RoundTrip rtt;
  EXPECT_FALSE(rtt.has_samples());
  EXPECT_EQ(rtt.TimeoutAfter(1), Seconds(1));
  EXPECT_EQ(rtt.TimeoutAfter(2), Seconds(2));
  EXPECT_EQ(rtt.TimeoutAfter(3), Seconds(4));
  EXPECT_EQ(rtt.TimeoutAfter(5), Seconds(16));
  EXPECT_EQ(rtt.TimeoutAfter(6), Seconds(30));  // the maximum
  EXPECT_EQ(rtt.TimeoutAfter(40), Seconds(30));
}

TEST(RoundTripTest, FollowsTheSmoothedMeanAndDeviation) {
  RoundTrip rtt(RoundTripLimits{Seconds(1), Milliseconds(1), Seconds(60)});
  rtt.Sample(Milliseconds(100));
  // The first answer: mean 100, deviation 50, timeout 100 + 4 * 50.
  EXPECT_EQ(rtt.smoothed(), Milliseconds(100));
  EXPECT_EQ(rtt.deviation(), Milliseconds(50));
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(300));
  rtt.Sample(Milliseconds(180));
  // deviation 3/4 * 50 + 1/4 * |100 - 180| = 57.5; mean 7/8 * 100 + 1/8 * 180 = 110.
  EXPECT_EQ(rtt.deviation(), absl::Microseconds(57500));
  EXPECT_EQ(rtt.smoothed(), Milliseconds(110));
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(340));
  EXPECT_EQ(rtt.TimeoutAfter(2), Milliseconds(680));
}

TEST(RoundTripTest, SteadyAnswersShrinkTheTimeoutToItsFloorAndSlowOnesRaiseIt) {
  RoundTrip rtt;  // floor 200 ms, ceiling 30 s
  for (int i = 0; i < 100; ++i) rtt.Sample(Milliseconds(2));
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(200));
  // A link that turns slow (a large transfer per answer) raises it within
  // a few answers, so what is still crossing is not sent again.
  for (int i = 0; i < 8; ++i) rtt.Sample(Milliseconds(900));
  EXPECT_GT(rtt.TimeoutAfter(1), Milliseconds(900));
  for (int i = 0; i < 100; ++i) rtt.Sample(Seconds(60));
  EXPECT_EQ(rtt.TimeoutAfter(1), Seconds(30));
}

// Resent requests give no samples, so an estimate learnt from small answers
// would keep expiring while large ones cross a slow link: each timeout
// doubles it until an answer to a request sent once is seen.
TEST(RoundTripTest, TimeoutsDoubleTheEstimateUntilTheNextSample) {
  RoundTrip rtt(RoundTripLimits{Seconds(1), Milliseconds(1), Seconds(10)});
  rtt.Sample(Milliseconds(100));  // timeout 300 ms
  rtt.TimedOut();
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(600));
  EXPECT_EQ(rtt.TimeoutAfter(2), Milliseconds(1200));  // and per send on top
  rtt.TimedOut();
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(1200));
  for (int i = 0; i < 10; ++i) rtt.TimedOut();
  EXPECT_EQ(rtt.TimeoutAfter(1), Seconds(10));  // the ceiling holds
  rtt.Sample(Milliseconds(100));
  // deviation 3/4 * 50 + 0; mean 100: back to the estimate, 100 + 4 * 37.5.
  EXPECT_EQ(rtt.TimeoutAfter(1), Milliseconds(250));
}

TEST(RoundTripTest, BackOffStopsAtTheCapButASlowerEstimateStands) {
  // An owner that gives up after 4 s: waits back off to 1 s at most.
  RoundTrip rtt(
      GivingUpAfter(Seconds(4), RoundTripLimits{Seconds(1), Milliseconds(1), Seconds(30)}));
  rtt.Sample(Milliseconds(100));  // timeout 300 ms
  EXPECT_EQ(rtt.TimeoutAfter(2), Milliseconds(600));
  EXPECT_EQ(rtt.TimeoutAfter(3), Seconds(1));
  for (int i = 0; i < 10; ++i) rtt.TimedOut();
  EXPECT_EQ(rtt.TimeoutAfter(1), Seconds(1));
  EXPECT_EQ(rtt.TimeoutAfter(9), Seconds(1));
  // Answers that take 2 s: the estimate itself is longer than the cap, so a
  // slow link is not asked again before its answers can have come.
  RoundTrip slow(
      GivingUpAfter(Seconds(4), RoundTripLimits{Seconds(1), Milliseconds(1), Seconds(30)}));
  slow.Sample(Seconds(2));  // timeout 2 + 4 * 1 = 6 s
  EXPECT_EQ(slow.TimeoutAfter(1), Seconds(6));
  EXPECT_EQ(slow.TimeoutAfter(3), Seconds(6));
  // Never below the floor.
  EXPECT_EQ(GivingUpAfter(Milliseconds(100)).backoff_cap, Milliseconds(200));
}

TEST(RoundTripTest, AnOwnerThatGivesUpAsksAgainBeforeItsFirstAnswerIsTimed) {
  // A first wait of 5 s for an owner that gives up after 5 s would never be
  // followed by a second send: it is cut to the cap.
  RoundTrip first(
      GivingUpAfter(Seconds(5), RoundTripLimits{Seconds(5), Milliseconds(200), Seconds(10)}));
  EXPECT_EQ(first.TimeoutAfter(1), Milliseconds(1250));
  first.TimedOut();
  EXPECT_EQ(first.TimeoutAfter(2), Milliseconds(1250));
  // A first wait already shorter than the cap stays as it was.
  RoundTrip patient(
      GivingUpAfter(Seconds(60), RoundTripLimits{Seconds(5), Milliseconds(200), Seconds(10)}));
  EXPECT_EQ(patient.TimeoutAfter(1), Seconds(5));
}

TEST(RoundTripTest, ANegativeElapsedTimeCountsAsZero) {
  RoundTrip rtt(RoundTripLimits{Seconds(1), Milliseconds(0), Seconds(5)});
  rtt.Sample(Milliseconds(-5));
  EXPECT_EQ(rtt.smoothed(), absl::ZeroDuration());
  EXPECT_EQ(rtt.TimeoutAfter(1), absl::ZeroDuration());
}

}  // namespace
}  // namespace strata
