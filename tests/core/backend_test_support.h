// What the tests that run ops on every backend share: moving lists of
// tensors to and from a backend, and joining the CUDA backend where its
// plugin loads and a GPU is present.
#ifndef STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_
#define STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/ops/backend.h"
#include "core/ops/cuda_plugin.h"
#include "tests/support/requirements.h"

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

// Registers the CUDA backend where its plugin loads and a GPU is visible,
// saying on stdout why it is absent otherwise; where STRATA_TEST_REQUIRE
// lists cuda, its absence is a failure (a GPU machine's check).
inline void JoinCudaBackendWherePresent() {
  const absl::StatusOr<const Backend*> cuda = OpenCudaBackend(CudaBackendOptions());
  if (cuda.ok()) return;
  if (IsRequired("cuda")) {
    ADD_FAILURE() << "STRATA_TEST_REQUIRE lists cuda, but the CUDA backend is absent: "
                  << cuda.status().message();
    return;
  }
  std::printf("[ backends ] cuda: absent (%s)\n", std::string(cuda.status().message()).c_str());
}

}  // namespace strata::testing

#endif  // STRATA_TESTS_CORE_BACKEND_TEST_SUPPORT_H_
