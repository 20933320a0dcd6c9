// One epoch of single-process training on the real Fashion-MNIST reaches the
// accuracy the default job is known for (ctest label "accuracy").
#include <gtest/gtest.h>

#include "core/model/job_config.h"
#include "runtime/single_trainer.h"

namespace strata {
namespace {

TEST(TrainingAccuracyTest, OneEpochOfTheDefaultJobReaches88Percent) {
  auto loaded = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  JobConfig config = *loaded;
  config.training.epochs = 1;
  RunOptions options;
  options.progress = false;
  auto summary = TrainSingle(config, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->steps, 937);
  EXPECT_GE(summary->test_accuracy, 0.88);
  EXPECT_LT(summary->train_loss, 0.5);
  EXPECT_GT(summary->images_per_sec, 0.0);
}

}  // namespace
}  // namespace strata
