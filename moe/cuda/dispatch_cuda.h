// CUDA versions of moe/dispatch.h's kernels, built where nvcc exists
// (STRATA_CUDA) and run where a GPU is present. The routing's index arrays
// are uploaded once per routing (DeviceRouting); tensors are float32 CUDA
// tensors with the same shapes as on the CPU: x and y {T, D}, slot buffers
// {E, C, D}, gate gradients {T, k}. Errors (host tensors, sizes that do not
// match the routing, CUDA failures) come back as a Status, never an abort.
//
//   STRATA_ASSIGN_OR_RETURN(DeviceRouting r, DeviceRouting::Upload(routing));
//   STRATA_RETURN_IF_ERROR(CudaEncode(r, x, slots));
#ifndef STRATA_MOE_CUDA_DISPATCH_CUDA_H_
#define STRATA_MOE_CUDA_DISPATCH_CUDA_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"
#include "moe/routing.h"

namespace strata::moe {

// The routing's expert, slot and gate arrays in device memory.
class DeviceRouting {
 public:
  static absl::StatusOr<DeviceRouting> Upload(const Routing& routing);
  DeviceRouting(DeviceRouting&& other) noexcept;
  DeviceRouting& operator=(DeviceRouting&& other) noexcept;
  DeviceRouting(const DeviceRouting&) = delete;
  DeviceRouting& operator=(const DeviceRouting&) = delete;
  ~DeviceRouting();

  int64_t tokens() const { return tokens_; }
  int k() const { return k_; }
  int experts() const { return experts_; }
  int64_t capacity() const { return capacity_; }
  const int32_t* expert() const { return expert_; }
  const int32_t* slot() const { return slot_; }
  const float* gate() const { return gate_; }

 private:
  DeviceRouting() = default;
  void Release();
  int64_t tokens_ = 0;
  int k_ = 0;
  int experts_ = 0;
  int64_t capacity_ = 0;
  int32_t* expert_ = nullptr;
  int32_t* slot_ = nullptr;
  float* gate_ = nullptr;
};

absl::Status CudaEncode(const DeviceRouting& r, const Tensor& x, const Tensor& slots);
absl::Status CudaDecode(const DeviceRouting& r, const Tensor& expert_out, const Tensor& y);
absl::Status CudaDecodeBackward(const DeviceRouting& r, const Tensor& grad_y,
                                const Tensor& expert_out, const Tensor& grad_expert_out,
                                const Tensor& grad_gate);
absl::Status CudaEncodeBackward(const DeviceRouting& r, const Tensor& grad_slots,
                                const Tensor& grad_x);

}  // namespace strata::moe

#endif  // STRATA_MOE_CUDA_DISPATCH_CUDA_H_
