// The parameter store's rules: BSP averaging, the exact SSP bound per chunk,
// ASP, pushes refused without a trace, state keys (the mean of the pushers'
// values), and checkpoints. Each bound is tested from both sides, so a rule
// that is looser or tighter than the contract fails.
#include "server/parameter_store.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

StoreOptions Options(Consistency c, int workers, int staleness = 0) {
  StoreOptions o;
  o.consistency = c;
  o.conv_workers = workers;
  o.staleness = staleness;
  o.optimizer.lr = 0.5f;
  return o;
}

// A store of `plan`'s chunks on server 0, every chunk initialised to `init`.
void MakeStore(const PartitionPlan& plan, const StoreOptions& o, float init,
               std::unique_ptr<ParameterStore>* out) {
  auto store = ParameterStore::Create(plan, 0, o);
  ASSERT_TRUE(store.ok()) << store.status();
  for (const Chunk& c : plan.chunks_of_server(0)) {
    std::vector<float> v(c.length, init);
    ASSERT_TRUE((*store)->Init(c, v.data()).ok());
  }
  *out = *std::move(store);
}

TEST(ParameterStoreTest, BspAveragesAllWorkersThenAppliesOnce) {
  PartitionPlan plan = PartitionPlan::Build({4}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, Options(Consistency::kBsp, 2), 1.0f, &store));
  const Chunk c = plan.chunks()[0];
  EXPECT_TRUE(store->CanServe(c, 0));
  EXPECT_FALSE(store->CanServe(c, 1));
  const float g0[4] = {1, 2, 3, 4}, g1[4] = {3, 2, 1, 0};
  EXPECT_EQ(*store->Push(0, 0, c, g0), PushOutcome::kAccepted);
  EXPECT_EQ(*store->Push(0, 0, c, g0), PushOutcome::kDuplicate);  // retried push
  EXPECT_FALSE(store->CanServe(c, 1));
  EXPECT_EQ(*store->Check(1, 0, c), PushOutcome::kApplied);  // would complete the iteration
  EXPECT_EQ(*store->Push(1, 0, c, g1), PushOutcome::kApplied);
  EXPECT_TRUE(store->CanServe(c, 1));
  EXPECT_EQ(store->version(c), 1);
  // mean gradient is 2 everywhere; p = 1 - 0.5 * 2 = 0.
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(store->value(c)[i], 0.0f);
  EXPECT_EQ(*store->Push(1, 0, c, g1), PushOutcome::kDuplicate);  // late retry
  auto ahead = store->Push(0, 5, c, g0);
  EXPECT_EQ(ahead.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ahead.status().message(),
            "BSP push for iteration 5 of key 0 while the server is at 1 (a worker ran ahead "
            "without pulling)");
  auto stranger = store->Push(7, 1, c, g0);
  EXPECT_EQ(stranger.status().message(), "push from worker rank 7, the job has 2 conv workers");
  // The refused pushes left no trace: iteration 1 proceeds as usual.
  EXPECT_EQ(*store->Push(0, 1, c, g0), PushOutcome::kAccepted);
  EXPECT_EQ(*store->Push(1, 1, c, g1), PushOutcome::kApplied);
  EXPECT_EQ(store->version(c), 2);
}

// s = 1, two workers. A pull for iteration t is answered exactly while
// t - (iterations both workers completed on the chunk) <= 1. Under BSP the
// lead-1 pull below would wait; under ASP (or a bound of s + 1) the lead-2
// pull would be answered.
TEST(ParameterStoreTest, SspAnswersALeadOfExactlySAndNotSPlusOne) {
  PartitionPlan plan = PartitionPlan::Build({2}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(
      MakeStore(plan, Options(Consistency::kSsp, 2, /*staleness=*/1), 0.0f, &store));
  const Chunk c = plan.chunks()[0];
  const float g[2] = {1, 1};
  // Worker 0 races ahead; worker 1 has pushed nothing.
  ASSERT_EQ(*store->Push(0, 0, c, g), PushOutcome::kApplied);
  EXPECT_EQ(store->version(c), 0);
  EXPECT_TRUE(store->CanServe(c, 1));  // lead 1 = s: answered
  store->NoteServed(c, 1);
  ASSERT_EQ(*store->Push(0, 1, c, g), PushOutcome::kApplied);
  EXPECT_FALSE(store->CanServe(c, 2));  // lead 2 = s + 1: worker 0 must wait
  ASSERT_EQ(*store->Push(1, 0, c, g), PushOutcome::kApplied);
  EXPECT_EQ(store->version(c), 1);
  EXPECT_TRUE(store->CanServe(c, 2));
  store->NoteServed(c, 2);
  EXPECT_FALSE(store->CanServe(c, 3));
  EXPECT_EQ(store->max_served_lead(), 1);
  EXPECT_EQ(store->clocks(), std::vector<int64_t>({2, 1}));
  // Each push applied on arrival with gradient / workers: 3 pushes x 0.5 x 0.5.
  EXPECT_FLOAT_EQ(store->value(c)[0], -0.75f);
}

// The bound holds per chunk: a worker that pushed other keys has not
// advanced this one. (A rule that advances a worker's clock on any key's
// push would answer the pull of key 0 below.)
TEST(ParameterStoreTest, SspBoundsEachChunkByItsOwnPushes) {
  PartitionPlan plan = PartitionPlan::Build({2, 2}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(
      MakeStore(plan, Options(Consistency::kSsp, 2, /*staleness=*/1), 0.0f, &store));
  const Chunk k0 = plan.chunks_of_key(0)[0], k1 = plan.chunks_of_key(1)[0];
  const float g[2] = {1, 1};
  for (int t = 0; t < 3; ++t) {
    ASSERT_EQ(*store->Push(0, t, k0, g), PushOutcome::kApplied) << t;
    if (t < 2) {
      ASSERT_EQ(*store->Push(0, t, k1, g), PushOutcome::kApplied) << t;
      ASSERT_EQ(*store->Push(1, t, k1, g), PushOutcome::kApplied) << t;
    }
    if (t == 0) {
      ASSERT_EQ(*store->Push(1, t, k0, g), PushOutcome::kApplied);
    }
  }
  // Worker 1 completed 2 iterations of key 1 but only 1 of key 0.
  EXPECT_EQ(store->clocks(), std::vector<int64_t>({3, 2}));
  EXPECT_TRUE(store->CanServe(k1, 3));   // 3 - 2 <= 1
  EXPECT_FALSE(store->CanServe(k0, 3));  // 3 - 1 > 1
  EXPECT_TRUE(store->CanServe(k0, 2));
}

TEST(ParameterStoreTest, SspRefusesPushesBeyondTheBoundAndRecordsNothing) {
  PartitionPlan plan = PartitionPlan::Build({2}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(
      MakeStore(plan, Options(Consistency::kSsp, 2, /*staleness=*/1), 0.0f, &store));
  const Chunk c = plan.chunks()[0];
  const float g[2] = {1, 1};
  ASSERT_EQ(*store->Push(0, 0, c, g), PushOutcome::kApplied);
  ASSERT_EQ(*store->Push(0, 1, c, g), PushOutcome::kApplied);
  // Iteration 2 is two ahead of worker 1 (which completed none).
  auto ahead = store->Push(0, 2, c, g);
  EXPECT_EQ(ahead.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ahead.status().message(),
            "SSP push for iteration 2 of key 0 from worker 0 while the slowest worker there has "
            "completed 0 iterations: more than the staleness bound 1 ahead");
  // A push that skips iterations (a forged far-future one) is refused too.
  auto skip = store->Push(1, 1000000, c, g);
  EXPECT_EQ(skip.status().message(),
            "ssp push for iteration 1000000 of key 0 from worker 1, whose next iteration there "
            "is 0 (iterations are pushed in order)");
  EXPECT_FLOAT_EQ(store->value(c)[0], -0.5f);  // two pushes x 0.5 x 0.5, nothing else
  // Neither refusal was recorded: worker 1's real pushes and worker 0's
  // iteration 2 are applied, not taken for duplicates.
  EXPECT_EQ(*store->Push(1, 0, c, g), PushOutcome::kApplied);
  EXPECT_EQ(*store->Push(0, 2, c, g), PushOutcome::kApplied);
  EXPECT_EQ(*store->Push(1, 1, c, g), PushOutcome::kApplied);
  EXPECT_EQ(*store->Push(1, 1, c, g), PushOutcome::kDuplicate);
  EXPECT_EQ(store->clocks(), std::vector<int64_t>({3, 2}));
}

// ASP answers every pull at once (BSP would hold the lead-5 pull) and
// still refuses a push that skips iterations.
TEST(ParameterStoreTest, AspNeverWaitsButKeepsEachWorkersIterationsInOrder) {
  PartitionPlan plan = PartitionPlan::Build({2}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, Options(Consistency::kAsp, 2), 0.0f, &store));
  const Chunk c = plan.chunks()[0];
  const float g[2] = {1, 1};
  for (int t = 0; t < 5; ++t) ASSERT_EQ(*store->Push(0, t, c, g), PushOutcome::kApplied);
  EXPECT_EQ(store->version(c), 0);  // worker 1 completed nothing
  EXPECT_TRUE(store->CanServe(c, 5));
  EXPECT_TRUE(store->CanServe(c, 1000));
  auto skip = store->Push(1, 3, c, g);
  EXPECT_EQ(skip.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store->Push(1, 0, c, g), PushOutcome::kApplied);
  EXPECT_EQ(store->version(c), 1);
}

StoreOptions WithStateKey(Consistency c, int workers) {
  StoreOptions o = Options(c, workers);
  o.keys = {KeyRule{KeyKind::kParameter, KeyOwner::kConvWorkers},
            KeyRule{KeyKind::kState, KeyOwner::kConvWorkers}};
  return o;
}

// A state key holds the mean of the pushers' values; no optimizer step.
TEST(ParameterStoreTest, BspStateKeysHoldTheMeanOfTheIterationsValues) {
  PartitionPlan plan = PartitionPlan::Build({2, 3}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, WithStateKey(Consistency::kBsp, 2), 1.0f, &store));
  const Chunk s = plan.chunks_of_key(1)[0];
  const float a[3] = {1, 2, 3}, b[3] = {3, 6, 9};
  EXPECT_EQ(*store->Push(0, 0, s, a), PushOutcome::kAccepted);
  EXPECT_FLOAT_EQ(store->value(s)[0], 1.0f);  // unchanged until every worker pushed
  EXPECT_EQ(*store->Push(1, 0, s, b), PushOutcome::kApplied);
  EXPECT_FLOAT_EQ(store->value(s)[0], 2.0f);
  EXPECT_FLOAT_EQ(store->value(s)[1], 4.0f);
  EXPECT_FLOAT_EQ(store->value(s)[2], 6.0f);
  EXPECT_EQ(store->version(s), 1);
  EXPECT_EQ(store->rule(1).kind, KeyKind::kState);
}

TEST(ParameterStoreTest, AsyncStateKeysHoldTheMeanOfEachWorkersLatestValues) {
  PartitionPlan plan = PartitionPlan::Build({2, 2}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, WithStateKey(Consistency::kAsp, 2), 1.0f, &store));
  const Chunk s = plan.chunks_of_key(1)[0];
  const float a[2] = {3, 5}, b[2] = {7, 9};
  ASSERT_TRUE(store->Push(0, 0, s, a).ok());
  EXPECT_FLOAT_EQ(store->value(s)[0], 2.0f);  // (3 + initial 1) / 2
  ASSERT_TRUE(store->Push(0, 1, s, b).ok());
  EXPECT_FLOAT_EQ(store->value(s)[0], 4.0f);  // worker 0's latest is 7
  ASSERT_TRUE(store->Push(1, 0, s, a).ok());
  EXPECT_FLOAT_EQ(store->value(s)[1], 7.0f);  // (9 + 5) / 2
}

TEST(ParameterStoreTest, FcWorkerKeysCountTheirOwnPushers) {
  PartitionPlan plan = PartitionPlan::Build({2, 2}, 1);
  StoreOptions o = Options(Consistency::kBsp, 4);
  o.fc_workers = 2;
  o.keys = {KeyRule{KeyKind::kParameter, KeyOwner::kConvWorkers},
            KeyRule{KeyKind::kParameter, KeyOwner::kFcWorkers}};
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, o, 0.0f, &store));
  EXPECT_EQ(store->pushers(0), 4);
  EXPECT_EQ(store->pushers(1), 2);
  const Chunk head = plan.chunks_of_key(1)[0];
  const float g[2] = {1, 1};
  EXPECT_EQ(store->Check(2, 0, head).status().message(),
            "push from worker rank 2, the job has 2 FC workers");
  EXPECT_EQ(*store->Push(0, 0, head, g), PushOutcome::kAccepted);
  EXPECT_EQ(*store->Push(1, 0, head, g), PushOutcome::kApplied);
  o.fc_workers = 0;
  EXPECT_FALSE(ParameterStore::Create(plan, 0, o).ok());
}

TEST(ParameterStoreTest, CheckpointRoundTripKeepsEveryChunksClocks) {
  PartitionPlan plan = PartitionPlan::Build({3, 5}, 2, 4);
  const StoreOptions o = Options(Consistency::kSsp, 2, 1);
  auto store = ParameterStore::Create(plan, 1, o);
  ASSERT_TRUE(store.ok());
  for (const Chunk& c : plan.chunks_of_server(1)) {
    std::vector<float> v(c.length, 2.0f);
    ASSERT_TRUE((*store)->Init(c, v.data()).ok());
  }
  const Chunk c = plan.chunks_of_server(1)[0];
  std::vector<float> g(c.length, 1.0f);
  ASSERT_TRUE((*store)->Push(0, 0, c, g.data()).ok());
  ASSERT_TRUE((*store)->Push(0, 1, c, g.data()).ok());
  Checkpoint saved = (*store)->Capture();
  auto other = ParameterStore::Create(plan, 1, o);
  ASSERT_TRUE((*other)->Restore(saved).ok());
  EXPECT_FLOAT_EQ((*other)->value(c)[0], 1.5f);
  // Worker 0's next iteration there is 2, worker 1's is 0.
  EXPECT_EQ(*(*other)->Check(0, 1, c), PushOutcome::kDuplicate);
  EXPECT_EQ((*other)->Check(0, 2, c).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*(*other)->Check(1, 0, c), PushOutcome::kApplied);
  auto wrong_server = ParameterStore::Create(plan, 0, o);
  EXPECT_EQ((*wrong_server)->Restore(saved).code(), absl::StatusCode::kInvalidArgument);
}

// A BSP job that lost a conv worker comes back from its checkpoint with
// the others: every chunk at its version, each of the remaining pushers
// due there. Under SSP the per-worker clocks differ, so the shape must not.
TEST(ParameterStoreTest, ABspCheckpointRestoresWithAnotherNumberOfConvWorkers) {
  PartitionPlan plan = PartitionPlan::Build({4}, 1);
  std::unique_ptr<ParameterStore> store;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, Options(Consistency::kBsp, 3), 1.0f, &store));
  const Chunk c = plan.chunks()[0];
  const float g[4] = {1, 1, 1, 1};
  for (int w = 0; w < 3; ++w) ASSERT_TRUE(store->Push(w, 0, c, g).ok());
  ASSERT_TRUE(store->Push(0, 1, c, g).ok());  // iteration 1 in progress: not saved
  const Checkpoint saved = store->Capture();

  auto fewer = ParameterStore::Create(plan, 0, Options(Consistency::kBsp, 2));
  ASSERT_TRUE(fewer.ok());
  ASSERT_TRUE((*fewer)->Restore(saved).ok());
  EXPECT_EQ((*fewer)->version(c), 1);
  EXPECT_FLOAT_EQ((*fewer)->value(c)[0], 0.5f);  // 1 - 0.5 * mean(1, 1, 1)
  // Both remaining workers push iteration 1, and two pushes complete it.
  EXPECT_EQ(*(*fewer)->Push(0, 1, c, g), PushOutcome::kAccepted);
  EXPECT_EQ(*(*fewer)->Push(1, 1, c, g), PushOutcome::kApplied);
  EXPECT_EQ((*fewer)->version(c), 2);
  EXPECT_EQ((*fewer)->Check(2, 2, c).status().message(),
            "push from worker rank 2, the job has 2 conv workers");

  StoreOptions ssp = Options(Consistency::kSsp, 3, 1);
  std::unique_ptr<ParameterStore> async;
  ASSERT_NO_FATAL_FAILURE(MakeStore(plan, ssp, 1.0f, &async));
  ssp.conv_workers = 2;
  auto other = ParameterStore::Create(plan, 0, ssp);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->Restore(async->Capture()).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata
