// IterationRecord's JSON and the spans a timeline or trace draws from it.
#include "core/control/iteration_record.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(IterationRecordTest, SpansFollowThePhasesFromTheStartWithEachPhasesWaits) {
  IterationRecord r;
  r.start_seconds = 10.0;
  r.phase_seconds = {0.010, 0.050, 0.020, 0.040, 0.030, 0.0};  // load .. boundary
  r.device_wait_seconds[static_cast<int>(Phase::kLoad)] = 0.004;
  r.wait_seconds[static_cast<int>(Phase::kForward)] = 0.015;  // the MoE all-to-all
  r.wait_seconds[static_cast<int>(Phase::kSynchronise)] = 0.030;
  r.Summarise();
  const std::vector<Span> spans = SpansOfRecord(r.ToJson());
  struct Expected {
    double start, end;
    SpanKind kind;
    Phase phase;
  };
  const std::vector<Expected> expected = {
      {10.000, 10.004, SpanKind::kDeviceWait, Phase::kLoad},
      {10.004, 10.010, SpanKind::kCompute, Phase::kLoad},
      {10.010, 10.045, SpanKind::kCompute, Phase::kForward},
      {10.045, 10.060, SpanKind::kPeerWait, Phase::kForward},
      {10.060, 10.080, SpanKind::kPeerWait, Phase::kExchange},  // all waits
      {10.080, 10.120, SpanKind::kCompute, Phase::kBackward},
      {10.120, 10.150, SpanKind::kPeerWait, Phase::kSynchronise},
  };
  ASSERT_EQ(spans.size(), expected.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_NEAR(spans[i].start, expected[i].start, 1e-9) << i;
    EXPECT_NEAR(spans[i].end, expected[i].end, 1e-9) << i;
    EXPECT_EQ(spans[i].kind, expected[i].kind) << i;
    EXPECT_EQ(spans[i].phase, expected[i].phase) << i;
  }
  EXPECT_STREQ(SpanKindName(spans[0].kind), "device wait");
  // The split agrees: waiting is the 4 ms for the device and the 6 ms of
  // loading, communication 15 + 20 + 30 ms on peers, compute the rest.
  EXPECT_NEAR(r.waiting_seconds, 0.010, 1e-9);
  EXPECT_NEAR(r.communication_seconds, 0.065, 1e-9);
  EXPECT_NEAR(r.compute_seconds, 0.075, 1e-9);
}

TEST(IterationRecordTest, ARecordWithoutAStartHasNoSpans) {
  nlohmann::json old = IterationRecord().ToJson();
  old.erase("start");
  EXPECT_TRUE(SpansOfRecord(old).empty());
}

}  // namespace
}  // namespace strata
