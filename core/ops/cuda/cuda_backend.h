// The CUDA backend: device memory for tensors and every op of
// core/ops/backend.h on a GPU (element-wise kernels, cuBLAS for the matrix
// products, the loss, dropout's counter-based masks, the optimizers' fused
// updates, the MoE routing and dispatch: routing_kernels.h, cuDNN for
// convolution, pooling and BatchNorm: cudnn_layer_kernels.h), built when
// nvcc exists (STRATA_CUDA=AUTO|ON) and run only where a GPU is present.
// Programs reach it through the plugin (cuda_plugin.cu, loaded by
// core/ops/cuda_plugin.h), which calls it so:
//
//   if (CudaDeviceCount() > 0) {
//     STRATA_RETURN_IF_ERROR(RegisterCudaBackend());
//     const Backend& gpu = **BackendRegistry::Global().Find("cuda");
//     STRATA_ASSIGN_OR_RETURN(Tensor x, gpu.Upload(host));
//     STRATA_RETURN_IF_ERROR(gpu.Relu(x, x));
//   }
//
// The backend's ops run in order on one stream of its own and return
// without waiting for the GPU (a launch error comes back at once, a fault
// in a kernel from the next Download); Download waits for everything
// before it. Memory comes from a caching allocator over cudaMalloc, which
// the stream's order makes safe to reuse at once. Every call is checked; a
// CUDA or cuBLAS error comes back as a Status naming the call, never as an
// abort.
#ifndef STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_
#define STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_

#include <string>

#include "absl/status/status.h"
#include "core/ops/cuda_plugin_abi.h"
#include "core/tensor/tensor.h"

namespace strata {

// Number of visible CUDA devices; 0 when there is no GPU or no driver (and
// then, unless `why` is null, what the CUDA runtime answered).
int CudaDeviceCount(std::string* why = nullptr);

// Registers a caching cudaMalloc allocator for Device::kCuda tensors.
// Fails when no device is present.
absl::Status RegisterCudaAllocator();
// Registers the allocator and the "cuda" backend on options.device, which
// becomes the calling thread's device. FailedPrecondition when no device is
// present; calls after the first do nothing, but one naming another device
// fails (a process computes on one GPU).
absl::Status RegisterCudaBackend(const CudaBackendOptions& options = {});

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_CUDA_BACKEND_H_
