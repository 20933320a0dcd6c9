// What the CUDA backend's ops share: its stream and the library handles
// bound to it (every op of one backend runs in order on that stream), and
// the math switch they all honour.
#ifndef STRATA_CORE_OPS_CUDA_CUDA_CONTEXT_H_
#define STRATA_CORE_OPS_CUDA_CUDA_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace strata {

struct CudaContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudnnHandle_t dnn = nullptr;
  // TensorFloat-32 in matrix products and convolutions (off: full float32).
  bool tf32 = false;
};

// Internal naming `call` and the library's message unless it succeeded.
inline absl::Status CublasStatus(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cublasGetStatusString(status)));
}
inline absl::Status CudnnStatus(cudnnStatus_t status, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(call, ": ", cudnnGetErrorString(status)));
}

}  // namespace strata

#define STRATA_CUBLAS_CHECK(call) ::strata::CublasStatus((call), #call)
#define STRATA_CUDNN_CHECK(call) ::strata::CudnnStatus((call), #call)

#endif  // STRATA_CORE_OPS_CUDA_CUDA_CONTEXT_H_
