// Host <-> device copies for CUDA tests (tests that link strata_cuda).
#ifndef STRATA_TESTS_SUPPORT_CUDA_TENSORS_H_
#define STRATA_TESTS_SUPPORT_CUDA_TENSORS_H_

#include <gtest/gtest.h>

#include "core/ops/cuda/cuda_backend.h"

namespace strata::testing {

// A CUDA copy of a host tensor (a test failure if the copy fails).
inline Tensor ToDevice(const Tensor& host) {
  Tensor d = Tensor::Empty(host.shape(), DType::kF32, Device::kCuda);
  EXPECT_TRUE(CopyToDevice(host, d).ok());
  return d;
}

// A host copy of a CUDA tensor.
inline Tensor ToHost(const Tensor& device) {
  Tensor h = Tensor::Empty(device.shape());
  EXPECT_TRUE(CopyToHost(device, h).ok());
  return h;
}

}  // namespace strata::testing

#endif  // STRATA_TESTS_SUPPORT_CUDA_TENSORS_H_
