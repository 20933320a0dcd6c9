// Single-process training on the real Fashion-MNIST: checkpoint/resume equal
// to an uninterrupted run, and a checkpoint of another model refused.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/model/job_config.h"
#include "core/train/checkpoint.h"
#include "runtime/single_trainer.h"

namespace strata {
namespace {

JobConfig DefaultConfig() {
  auto config = LoadJobConfig(std::string(STRATA_SOURCE_DIR) + "/configs/fashion_mnist.json");
  EXPECT_TRUE(config.ok()) << config.status();
  return *config;
}

class TrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata_training_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

std::vector<float> FinalParameters(const std::string& checkpoint) {
  auto c = ReadCheckpoint(checkpoint);
  EXPECT_TRUE(c.ok()) << c.status();
  std::vector<float> all;
  for (const auto& t : c->tensors) {
    const auto v = t.value.ToVector();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST_F(TrainingTest, ResumeFromCheckpointEqualsAnUninterruptedRun) {
  JobConfig config = DefaultConfig();
  config.schedule = LrScheduleConfig();  // constant: independent of the run length
  config.training.evaluate = false;
  RunOptions options;
  options.progress = false;
  options.train_limit = 2048;

  config.training.max_steps = 30;
  options.checkpoint_path = dir_ + "/straight.ckpt";
  ASSERT_TRUE(TrainSingle(config, options).ok());

  config.training.max_steps = 18;
  options.checkpoint_path = dir_ + "/resumed.ckpt";
  ASSERT_TRUE(TrainSingle(config, options).ok());
  config.training.max_steps = 30;
  options.restore = true;
  auto resumed = TrainSingle(config, options);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->steps, 30);

  const auto a = FinalParameters(dir_ + "/straight.ckpt");
  const auto b = FinalParameters(dir_ + "/resumed.ckpt");
  ASSERT_EQ(a.size(), b.size());
  float worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
  EXPECT_LE(worst, 1e-6f);
}

TEST_F(TrainingTest, RestoreRejectsACheckpointOfAnotherModel) {
  JobConfig config = DefaultConfig();
  config.training.evaluate = false;
  config.training.max_steps = 2;
  RunOptions options;
  options.progress = false;
  options.train_limit = 256;
  options.checkpoint_path = dir_ + "/a.ckpt";
  ASSERT_TRUE(TrainSingle(config, options).ok());
  config.model.layers[7].out_features = 256;  // fc1 512 -> 256
  options.restore = true;
  auto r = TrainSingle(config, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(
                "checkpoint tensor \"fc1.weight\" has shape [512, 3136], the model expects "
                "[256, 3136]"),
            std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace strata
