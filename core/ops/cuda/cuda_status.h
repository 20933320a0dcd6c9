// Status helpers shared by the CUDA backend's files: CUDA runtime errors as
// absl::Status naming the call.
#ifndef STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_
#define STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace strata {

// Internal, naming `call` and CUDA's error text, unless `err` is success.
inline absl::Status CudaStatus(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudaGetErrorString(err)));
}

}  // namespace strata

// The status of a CUDA runtime call, e.g. STRATA_CUDA_CHECK(cudaMalloc(&p, n)).
#define STRATA_CUDA_CHECK(call) ::strata::CudaStatus((call), #call)

#endif  // STRATA_CORE_OPS_CUDA_CUDA_STATUS_H_
