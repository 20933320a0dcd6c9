// PrefetchingLoader: the batches of its BatchLoader, made a step ahead, and
// a warning when the caller mostly waits for them.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/data/batch_loader.h"
#include "core/data/dataset.h"
#include "core/data/prefetching_loader.h"

namespace strata {
namespace {

BatchLoaderOptions Options() {
  BatchLoaderOptions o;
  o.global_batch = 4;
  o.seed = 3;
  o.crop_padding = 1;
  o.horizontal_flip = true;
  return o;
}

TEST(PrefetchingLoaderTest, GivesTheLoadersBatchesAcrossEpochsAndJumps) {
  const Dataset ds = MakeSyntheticDataset({6, 6, 2}, 3, 40, 1);  // 10 steps per epoch
  BatchLoader reference(ds, Options());
  BatchLoader inner(ds, Options());
  PrefetchingLoader loader(inner);
  // In order across an epoch boundary, then back (a rewind), then ahead.
  for (int64_t step : {0, 1, 2, 9, 10, 11, 3, 4, 25, 26}) {
    const Batch want = reference.ForStep(step);
    const Batch got = loader.ForStep(step);
    EXPECT_EQ(got.labels, want.labels) << "step " << step;
    EXPECT_EQ(got.images.ToVector(), want.images.ToVector()) << "step " << step;
  }
}

TEST(PrefetchingLoaderTest, TheNextStepIsReadyBeforeItIsAskedFor) {
  const Dataset ds = MakeSyntheticDataset({6, 6, 2}, 3, 40, 1);
  BatchLoader inner(ds, Options());
  PrefetchingLoader loader(inner);
  loader.ForStep(0);  // made on demand: one wait
  EXPECT_EQ(loader.waits(), 1);
  for (int64_t step = 1; step <= 3; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the step's compute
    loader.ForStep(step);
  }
  EXPECT_EQ(loader.waits(), 1);
  loader.ForStep(7);  // a jump is made on demand
  EXPECT_EQ(loader.waits(), 2);
}

TEST(PrefetchingLoaderTest, ACallerThatOnlyWaitsForBatchesIsToldTheLoaderIsItsBottleneck) {
  // Large images, nothing done between calls: waiting is all the caller does.
  const Dataset ds = MakeSyntheticDataset({64, 64, 3}, 3, 40, 1);
  BatchLoader inner(ds, Options());
  ::testing::internal::CaptureStderr();
  {
    PrefetchingLoader loader(inner);
    for (int64_t step = 0; step < 12; ++step) loader.ForStep(step);
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("the data loader is the bottleneck: over the last 10 steps"),
            std::string::npos)
      << log;
}

TEST(PrefetchingLoaderTest, ACallerThatComputesBetweenBatchesIsNotWarned) {
  const Dataset ds = MakeSyntheticDataset({6, 6, 2}, 3, 40, 1);
  BatchLoader inner(ds, Options());
  ::testing::internal::CaptureStderr();
  {
    PrefetchingLoader loader(inner);
    for (int64_t step = 0; step < 12; ++step) {
      loader.ForStep(step);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr().find("bottleneck"), std::string::npos);
}

}  // namespace
}  // namespace strata
