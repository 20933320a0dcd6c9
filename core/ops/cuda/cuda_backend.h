// The CUDA backend: device memory for tensors and the element-wise kernels
// of training (the Backend ops of core/ops/backend.h, SGD update), built when nvcc exists
// (STRATA_CUDA=AUTO|ON) and run only where a GPU is present.
//
//   if (CudaDeviceCount() > 0) {
//     RegisterCudaAllocator();                 // Tensor::Empty(..., Device::kCuda) works now
//     Tensor x = Tensor::Empty({n}, DType::kF32, Device::kCuda);
//     STRATA_RETURN_IF_ERROR(CopyToDevice(host, x));
//     STRATA_RETURN_IF_ERROR(CudaReluForward(x, y));
//   }
//
// Every call is checked; a CUDA error comes back as a Status naming the call
// and CUDA's message, never as an abort.
#ifndef STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_
#define STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_

#include "absl/status/status.h"
#include "core/tensor/tensor.h"

namespace strata {

// Number of visible CUDA devices; 0 when there is no GPU or no driver.
int CudaDeviceCount();

// Registers a caching cudaMalloc allocator for Device::kCuda tensors.
// Fails when no device is present.
absl::Status RegisterCudaAllocator();
// Registers the allocator and the "cuda" backend (every element-wise op of
// core/ops/backend.h). FailedPrecondition when no device is present; calls
// after the first do nothing.
absl::Status RegisterCudaBackend();

// Host <-> device copies of equally sized float tensors (synchronous).
absl::Status CopyToDevice(const Tensor& host, const Tensor& device);
absl::Status CopyToHost(const Tensor& device, const Tensor& host);

// y = max(x, 0) on device tensors of equal size.
absl::Status CudaReluForward(const Tensor& x, const Tensor& y);
// dx = dy where y > 0, else 0.
absl::Status CudaReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx);
// SGD with momentum (PyTorch's rule, as core/optim/optimizer.h) on device:
// d = g + wd*p; buf = mu*buf + d; p -= lr * (nesterov ? d + mu*buf : buf).
absl::Status CudaSgdUpdate(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                           float lr, float momentum, float weight_decay, bool nesterov);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_
