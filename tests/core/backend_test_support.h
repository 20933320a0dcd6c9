// What the tests that run ops on every backend share: moving lists of
// tensors to and from a backend, and joining the CUDA backend where it is
// built and a GPU is present (a test target that links strata_cuda
// defines STRATA_HAVE_CUDA).
#ifndef STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_
#define STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include "core/ops/backend.h"
#ifdef STRATA_HAVE_CUDA
#include "core/ops/cuda/cuda_backend.h"
#endif

namespace strata::testing {

using Tensors = std::vector<Tensor>;

// Device copies of host tensors; an undefined tensor stays undefined.
inline absl::StatusOr<Tensors> UploadAll(const Backend& b, const Tensors& host) {
  Tensors out;
  for (const Tensor& t : host) {
    if (!t.defined()) {
      out.push_back(Tensor());
      continue;
    }
    absl::StatusOr<Tensor> d = b.Upload(t);
    if (!d.ok()) return d.status();
    out.push_back(*std::move(d));
  }
  return out;
}

// Host copies of device tensors; an undefined tensor stays undefined.
inline absl::StatusOr<Tensors> DownloadAll(const Backend& b, const Tensors& device) {
  Tensors out;
  for (const Tensor& t : device) {
    if (!t.defined()) {
      out.push_back(Tensor());
      continue;
    }
    absl::StatusOr<Tensor> h = b.Download(t);
    if (!h.ok()) return h.status();
    out.push_back(*std::move(h));
  }
  return out;
}

// Registers the CUDA backend when this build has it and a GPU is visible,
// saying on stdout why it is absent otherwise.
inline void JoinCudaBackendWherePresent() {
#ifdef STRATA_HAVE_CUDA
  const absl::Status cuda = RegisterCudaBackend();
  if (!cuda.ok()) {
    std::printf("[ backends ] cuda: absent (%s)\n", std::string(cuda.message()).c_str());
  }
#else
  std::printf("[ backends ] cuda: not built (no nvcc at configure time)\n");
#endif
}

}  // namespace strata::testing

#endif  // STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_
