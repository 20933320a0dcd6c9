// Optimizer steps against values computed by hand, and LR schedules.
#include <gtest/gtest.h>

#include <cmath>

#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"

namespace strata {
namespace {

std::unique_ptr<Optimizer> Make(OptimizerConfig c) {
  auto opt = Optimizer::Create(c);
  EXPECT_TRUE(opt.ok()) << opt.status();
  return *std::move(opt);
}

TEST(SgdTest, PlainStep) {
  OptimizerConfig c;
  c.lr = 0.1f;
  auto opt = Make(c);
  EXPECT_EQ(opt->state_slots(), 0);
  float p[2] = {1.0f, -2.0f};
  const float g[2] = {0.5f, 1.0f};
  opt->Update(p, g, nullptr, 2, 0.1f, 1);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.1f);
}

TEST(SgdTest, MomentumAndWeightDecay) {
  OptimizerConfig c;
  c.momentum = 0.9f;
  c.weight_decay = 0.1f;
  auto opt = Make(c);
  float p = 1.0f, buf = 0.0f;
  const float g = 0.5f;
  // Step 1: d = 0.5 + 0.1*1 = 0.6; buf = 0.6; p = 1 - 0.1*0.6 = 0.94.
  opt->Update(&p, &g, &buf, 1, 0.1f, 1);
  EXPECT_FLOAT_EQ(buf, 0.6f);
  EXPECT_FLOAT_EQ(p, 0.94f);
  // Step 2: d = 0.5 + 0.094 = 0.594; buf = 0.54 + 0.594 = 1.134; p = 0.94 - 0.1134.
  opt->Update(&p, &g, &buf, 1, 0.1f, 2);
  EXPECT_FLOAT_EQ(buf, 1.134f);
  EXPECT_FLOAT_EQ(p, 0.8266f);
}

TEST(SgdTest, Nesterov) {
  OptimizerConfig c;
  c.momentum = 0.5f;
  c.nesterov = true;
  auto opt = Make(c);
  float p = 0.0f, buf = 0.0f;
  const float g = 1.0f;
  opt->Update(&p, &g, &buf, 1, 1.0f, 1);  // buf = 1; step = 1 + 0.5*1
  EXPECT_FLOAT_EQ(p, -1.5f);
  opt->Update(&p, &g, &buf, 1, 1.0f, 2);  // buf = 1.5; step = 1 + 0.75
  EXPECT_FLOAT_EQ(p, -3.25f);
}

TEST(AdamTest, FirstTwoSteps) {
  OptimizerConfig c;
  c.type = "adam";
  c.lr = 0.001f;
  auto opt = Make(c);
  ASSERT_EQ(opt->state_slots(), 2);
  float p = 1.0f, state[2] = {0.0f, 0.0f};
  float g = 0.2f;
  // Step 1: m̂ = g, v̂ = g², update = lr * g/(|g| + eps) ≈ lr.
  opt->Update(&p, &g, state, 1, 0.001f, 1);
  EXPECT_NEAR(p, 0.999f, 1e-7);
  EXPECT_FLOAT_EQ(state[0], 0.02f);
  EXPECT_NEAR(state[1], 0.001 * 0.04, 1e-9);
  // Step 2 with g = -0.1: m = 0.018 - 0.01 = 0.008, v = 0.999*4e-5 + 1e-5.
  g = -0.1f;
  opt->Update(&p, &g, state, 1, 0.001f, 2);
  const double m = 0.008, v = 0.999 * 4e-5 + 0.001 * 0.01;
  const double mhat = m / (1 - 0.81), vhat = v / (1 - 0.998001);
  EXPECT_NEAR(p, 0.999 - 0.001 * mhat / (std::sqrt(vhat) + 1e-8), 1e-6);
}

TEST(AdamWTest, DecoupledWeightDecay) {
  OptimizerConfig c;
  c.type = "adamw";
  c.lr = 0.1f;
  c.weight_decay = 0.5f;
  auto opt = Make(c);
  float p = 2.0f, state[2] = {0.0f, 0.0f};
  const float g = 0.0f;  // only the decay moves p: p -= lr*wd*p
  opt->Update(&p, &g, state, 1, 0.1f, 1);
  EXPECT_FLOAT_EQ(p, 1.9f);
}

TEST(OptimizerConfigTest, RejectsBadValuesByField) {
  OptimizerConfig c;
  c.type = "rmsprop";
  EXPECT_NE(Optimizer::Create(c).status().message().find("optimizer.type"), std::string::npos);
  c = OptimizerConfig();
  c.lr = 0.0f;
  EXPECT_NE(Optimizer::Create(c).status().message().find("optimizer.lr"), std::string::npos);
  c = OptimizerConfig();
  c.momentum = 1.0f;
  EXPECT_NE(Optimizer::Create(c).status().message().find("optimizer.momentum"), std::string::npos);
  c = OptimizerConfig();
  c.nesterov = true;
  EXPECT_NE(Optimizer::Create(c).status().message().find("nesterov"), std::string::npos);
}

TEST(LrScheduleTest, ConstantStepCosineAndWarmup) {
  LrScheduleConfig c;
  EXPECT_FLOAT_EQ(LrSchedule(c, 0.1f, 100).At(57), 0.1f);
  c.type = "step";
  c.step_size = 10;
  c.gamma = 0.5f;
  LrSchedule step(c, 1.0f, 100);
  EXPECT_FLOAT_EQ(step.At(9), 1.0f);
  EXPECT_FLOAT_EQ(step.At(10), 0.5f);
  EXPECT_FLOAT_EQ(step.At(25), 0.25f);
  c = LrScheduleConfig();
  c.type = "cosine";
  c.warmup_steps = 10;
  LrSchedule cosine(c, 1.0f, 110);
  EXPECT_FLOAT_EQ(cosine.At(0), 0.1f);
  EXPECT_FLOAT_EQ(cosine.At(9), 1.0f);
  EXPECT_FLOAT_EQ(cosine.At(10), 1.0f);
  EXPECT_NEAR(cosine.At(60), 0.5f, 1e-6);
  EXPECT_NEAR(cosine.At(110), 0.0f, 1e-6);
}

TEST(LrScheduleTest, ValidationNamesTheField) {
  LrScheduleConfig c;
  c.type = "linear";
  EXPECT_NE(ValidateLrSchedule(c).message().find("schedule.type"), std::string::npos);
  c.type = "step";
  EXPECT_NE(ValidateLrSchedule(c).message().find("schedule.step_size"), std::string::npos);
}

}  // namespace
}  // namespace strata
