// Status helpers shared by the CUDA code (core/ops/cuda, moe/cuda): CUDA
// runtime errors as absl::Status naming the call, and the device check on
// a kernel's tensor operands.
#ifndef STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_
#define STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/tensor/tensor.h"

namespace strata {

// Internal, naming `call` and CUDA's error text, unless `err` is success.
inline absl::Status CudaStatus(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(err)));
}

// InvalidArgument naming `what`, its dtype and device, unless `t` is a
// float32 CUDA tensor.
inline absl::Status CheckCudaFloat(const Tensor& t, const char* what) {
  if (t.device() == Device::kCuda && t.dtype() == DType::kF32) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " must be a float32 CUDA tensor, got ",
                                                 DTypeName(t.dtype()), " on ",
                                                 DeviceName(t.device())));
}

}  // namespace strata

// The status of a CUDA runtime call, e.g. STRATA_CUDA_CHECK(cudaMalloc(&p, n)).
#define STRATA_CUDA_CHECK(call) ::strata::CudaStatus((call), #call)

#endif  // STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_
