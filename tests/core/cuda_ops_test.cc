// CUDA kernels against the CPU reference. Skipped (with the reason) where
// no GPU is visible, as on CI machines.
#include <gtest/gtest.h>

#include "core/ops/cpu/elementwise.h"
#include "core/ops/cuda/cuda_backend.h"
#include "core/optim/optimizer.h"
#include "tests/core/gradient_check.h"
#include "tests/support/cuda_tensors.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

using strata::testing::ToDevice;
using strata::testing::ToHost;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) STRATA_SKIP_WITHOUT("cuda") << "no CUDA device visible";
    ASSERT_TRUE(RegisterCudaAllocator().ok());
  }
};

TEST_F(CudaOpsTest, ReluMatchesCpu) {
  const int64_t n = 100003;
  Tensor x = testing::RandomTensor({n}, 1);
  Tensor dy = testing::RandomTensor({n}, 2);
  Tensor y_cpu = Tensor::Empty({n}), dx_cpu = Tensor::Empty({n});
  ReluForward(x.data(), y_cpu.data(), n);
  ReluBackward(y_cpu.data(), dy.data(), dx_cpu.data(), n);
  Tensor y = Tensor::Empty({n}, DType::kF32, Device::kCuda);
  Tensor dx = Tensor::Empty({n}, DType::kF32, Device::kCuda);
  ASSERT_TRUE(CudaReluForward(ToDevice(x), y).ok());
  ASSERT_TRUE(CudaReluBackward(y, ToDevice(dy), dx).ok());
  EXPECT_EQ(MaxAbsDiff(ToHost(y), y_cpu), 0.0f);
  EXPECT_EQ(MaxAbsDiff(ToHost(dx), dx_cpu), 0.0f);
}

TEST_F(CudaOpsTest, SgdMatchesCpuOptimizer) {
  const int64_t n = 4099;
  OptimizerConfig c;
  c.momentum = 0.9f;
  c.weight_decay = 1e-4f;
  c.nesterov = true;
  auto opt = Optimizer::Create(c);
  ASSERT_TRUE(opt.ok());
  Tensor p = testing::RandomTensor({n}, 3), g = testing::RandomTensor({n}, 4);
  Tensor buf = Tensor::Zeros({n});
  Tensor dp = ToDevice(p), dg = ToDevice(g), dbuf = ToDevice(buf);
  for (int step = 1; step <= 3; ++step) {
    (*opt)->Update(p.data(), g.data(), buf.data(), n, 0.1f, step);
    ASSERT_TRUE(CudaSgdUpdate(dp, dg, dbuf, 0.1f, 0.9f, 1e-4f, true).ok());
  }
  EXPECT_LT(MaxAbsDiff(ToHost(dp), p), 1e-6f);
}

// Needs no GPU: argument checks come before any CUDA call.
TEST(CudaArgumentsTest, RejectsHostTensors) {
  Tensor host = Tensor::Zeros({4});
  auto s = CudaReluForward(host, host);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "relu operand must be a float32 CUDA tensor, got f32 on cpu");
}

}  // namespace
}  // namespace strata
