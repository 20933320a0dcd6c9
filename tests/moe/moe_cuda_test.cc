// The CUDA dispatch kernels against the CPU ones on a routing with dropped
// choices. Skipped (with the reason) where no GPU is visible, as on CI.
#include <gtest/gtest.h>

#include "core/ops/cuda/cuda_backend.h"
#include "moe/cuda/dispatch_cuda.h"
#include "moe/dispatch.h"
#include "tests/core/gradient_check.h"
#include "tests/support/cuda_tensors.h"
#include "tests/support/requirements.h"

namespace strata::moe {
namespace {

using strata::testing::ToDevice;
using strata::testing::ToHost;

constexpr int64_t kTokens = 300, kDim = 96;
constexpr int kExperts = 6, kK = 2;

class MoeCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CudaDeviceCount() == 0) STRATA_SKIP_WITHOUT("cuda") << "no CUDA device visible";
    ASSERT_TRUE(RegisterCudaAllocator().ok());
    const Tensor logits = strata::testing::RandomTensor({kTokens, kExperts}, 5);
    const GateOutput gate = TopKGate(logits.data(), kTokens, kExperts, kK, true);
    routing_ = AssignSlots(gate, kExperts, CapacityRule{0.8, 1}, false);  // some dropped
    ASSERT_GT(routing_.dropped, 0);
  }
  Shape SlotShape() const { return Shape{kExperts, routing_.capacity, kDim}; }
  Routing routing_;
};

TEST_F(MoeCudaTest, EveryKernelMatchesTheCpu) {
  auto device_routing = DeviceRouting::Upload(routing_);
  ASSERT_TRUE(device_routing.ok()) << device_routing.status();
  const Tensor x = strata::testing::RandomTensor({kTokens, kDim}, 1);
  const Tensor expert_out = strata::testing::RandomTensor(SlotShape(), 2);
  const Tensor grad_y = strata::testing::RandomTensor({kTokens, kDim}, 3);

  Tensor slots_cpu = Tensor::Zeros(SlotShape());
  Encode(routing_, x.data(), kDim, slots_cpu.data());
  Tensor slots = ToDevice(Tensor::Zeros(SlotShape()));
  ASSERT_TRUE(CudaEncode(*device_routing, ToDevice(x), slots).ok());
  EXPECT_EQ(MaxAbsDiff(ToHost(slots), slots_cpu), 0.0f);

  Tensor y_cpu = Tensor::Empty({kTokens, kDim});
  Decode(routing_, expert_out.data(), kDim, y_cpu.data());
  Tensor y = Tensor::Empty({kTokens, kDim}, DType::kF32, Device::kCuda);
  ASSERT_TRUE(CudaDecode(*device_routing, ToDevice(expert_out), y).ok());
  EXPECT_LT(MaxAbsDiff(ToHost(y), y_cpu), 1e-5f);

  Tensor grad_out_cpu = Tensor::Zeros(SlotShape());
  Tensor grad_gate_cpu = Tensor::Empty({kTokens, kK});
  DecodeBackward(routing_, grad_y.data(), expert_out.data(), kDim, grad_out_cpu.data(),
                 grad_gate_cpu.data());
  Tensor grad_out = ToDevice(Tensor::Zeros(SlotShape()));
  Tensor grad_gate = Tensor::Empty({kTokens, kK}, DType::kF32, Device::kCuda);
  ASSERT_TRUE(CudaDecodeBackward(*device_routing, ToDevice(grad_y), ToDevice(expert_out), grad_out,
                                 grad_gate)
                  .ok());
  EXPECT_LT(MaxAbsDiff(ToHost(grad_out), grad_out_cpu), 1e-6f);
  EXPECT_LT(MaxAbsDiff(ToHost(grad_gate), grad_gate_cpu), 1e-4f);

  Tensor grad_x_cpu = Tensor::Empty({kTokens, kDim});
  EncodeBackward(routing_, expert_out.data(), kDim, grad_x_cpu.data());
  Tensor grad_x = Tensor::Empty({kTokens, kDim}, DType::kF32, Device::kCuda);
  ASSERT_TRUE(CudaEncodeBackward(*device_routing, ToDevice(expert_out), grad_x).ok());
  EXPECT_LT(MaxAbsDiff(ToHost(grad_x), grad_x_cpu), 1e-5f);
}

TEST_F(MoeCudaTest, HostTensorsAndWrongSizesAreRefused) {
  auto device_routing = DeviceRouting::Upload(routing_);
  ASSERT_TRUE(device_routing.ok());
  const Tensor host_x = Tensor::Zeros({kTokens, kDim});
  Tensor slots = Tensor::Empty(SlotShape(), DType::kF32, Device::kCuda);
  EXPECT_EQ(CudaEncode(*device_routing, host_x, slots).message(),
            "x must be a float32 CUDA tensor, got f32 on cpu");
  Tensor small = Tensor::Empty({kExperts, 1, kDim}, DType::kF32, Device::kCuda);
  EXPECT_EQ(CudaEncode(*device_routing, ToDevice(host_x), small).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::moe
