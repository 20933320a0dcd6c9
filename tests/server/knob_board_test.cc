// The coordinator's knob rule: a change takes effect at an iteration no
// process may have started (at or after every lease granted), and every
// lease carries the start values and the changes agreed.
#include "server/knob_board.h"

#include <gtest/gtest.h>

#include "core/model/batch_shares.h"

namespace strata {
namespace {

KnobCatalog TestCatalog() {
  KnobCatalog c;
  KnobSpec d;
  d.name = "moe.pipeline_chunks";
  d.validate = [](const std::string& v) {
    return v == "0" ? absl::InvalidArgumentError("must be >= 1") : absl::OkStatus();
  };
  EXPECT_TRUE(c.Register(d).ok());
  KnobSpec w;
  w.name = "wire.format";
  w.alters_math = true;
  EXPECT_TRUE(c.Register(w).ok());
  return c;
}

const Peer kFc0{wire::Role::FC_WORKER, 0};
const Peer kFc1{wire::Role::FC_WORKER, 1};
const Peer kConv0{wire::Role::CONV_WORKER, 0};

TEST(KnobBoardTest, AChangeStartsAtOrAfterEveryLeaseGranted) {
  const KnobCatalog catalog = TestCatalog();
  KnobBoard board(&catalog, /*lead=*/8);
  ASSERT_EQ(board.RenewLease(kFc0, 0, {{"moe.pipeline_chunks", "1"}})->until, 8);
  ASSERT_EQ(board.RenewLease(kConv0, 5, {})->until, 13);
  ASSERT_EQ(board.RenewLease(kFc1, 2, {{"moe.pipeline_chunks", "1"}})->until, 10);
  absl::StatusOr<std::vector<KnobChange>> set = board.Set({{"moe.pipeline_chunks", "4"}});
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->size(), 1u);
  EXPECT_EQ((*set)[0].from_iteration, 13);  // conv worker 0 may run up to iteration 12
  // A lease never shrinks, and carries the start value and the change.
  const auto lease = board.RenewLease(kFc0, 1, {{"moe.pipeline_chunks", "1"}});
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->until, 9);
  ASSERT_EQ(lease->changes.size(), 2u);
  EXPECT_EQ(lease->changes[0].from_iteration, kKnobStart);
  EXPECT_EQ(lease->changes[0].value, "1");
  EXPECT_EQ(lease->changes[1].from_iteration, 13);
  EXPECT_EQ(lease->changes[1].value, "4");
  // A later change never comes before an earlier one.
  ASSERT_TRUE(board.RenewLease(kFc0, 3, {{"moe.pipeline_chunks", "1"}}).ok());
  EXPECT_EQ((*board.Set({{"moe.pipeline_chunks", "2"}}))[0].from_iteration, 13);
  const std::vector<KnobState> knobs = board.Get();
  ASSERT_EQ(knobs.size(), 1u);
  EXPECT_EQ(knobs[0].value, "2");
  EXPECT_EQ(knobs[0].since, 13);
}

TEST(KnobBoardTest, ARequestedIterationIsKeptOrRefusedWhenTooEarly) {
  const KnobCatalog catalog = TestCatalog();
  KnobBoard board(&catalog, 8);
  ASSERT_TRUE(board.RenewLease(kFc0, 10, {{"moe.pipeline_chunks", "1"}}).ok());
  EXPECT_EQ((*board.Set({{"moe.pipeline_chunks", "4"}}, 30))[0].from_iteration, 30);
  const auto early = board.Set({{"moe.pipeline_chunks", "2"}}, 17);
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(early.status().message(),
            "iteration 17 is too early: a process of the job may have started it (the earliest "
            "iteration a change can take effect at is 30)");
}

TEST(KnobBoardTest, RefusesUnknownUndeclaredAndInvalidKnobsAndMismatchedStarts) {
  const KnobCatalog catalog = TestCatalog();
  KnobBoard board(&catalog, 8);
  EXPECT_EQ(board.Set({{"wire.format", "v2"}}).status().message(),
            "no process of this job applies knob wire.format (the job's knobs: none yet)");
  ASSERT_TRUE(board.RenewLease(kFc0, 0, {{"moe.pipeline_chunks", "1"}}).ok());
  EXPECT_EQ(board.Set({{"moe.pipeline_chunks", "0"}}).status().message(),
            "moe.pipeline_chunks=0: must be >= 1");
  EXPECT_EQ(board.Set({{"nope", "1"}}).status().code(), absl::StatusCode::kNotFound);
  // One bad proposal schedules none.
  EXPECT_FALSE(board.Set({{"moe.pipeline_chunks", "4"}, {"nope", "1"}}).ok());
  EXPECT_EQ(board.Get()[0].since, kKnobStart);
  EXPECT_EQ(board.RenewLease(kFc1, 0, {{"moe.pipeline_chunks", "2"}}).status().message(),
            "fc worker 1 starts knob moe.pipeline_chunks at 2; the job started it at 1");
  EXPECT_EQ(board.RenewLease(kFc1, 0, {{"bogus", "2"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KnobBoardTest, BatchSharesMustGiveEveryConvWorkerOfTheJobAWeight) {
  const KnobCatalog& catalog = KnobCatalog::Global();  // batch.shares: RegisterModules in the test main
  KnobBoard board(&catalog, 4);
  ASSERT_TRUE(board.RenewLease(kConv0, 0, {{kBatchSharesKnob, "1:1"}}).ok());
  EXPECT_EQ(board.Set({{kBatchSharesKnob, "3:1:1"}}).status().message(),
            "batch.shares=3:1:1: the job has 2 conv workers; give one weight each");
  EXPECT_EQ(board.Set({{kBatchSharesKnob, "3:x"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<KnobChange>> set = board.Set({{kBatchSharesKnob, "3:1"}});
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)[0].from_iteration, 4);
  EXPECT_TRUE(board.Set({{kBatchSharesKnob, "even"}}).ok());
}

}  // namespace
}  // namespace strata
