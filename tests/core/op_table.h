// The rows of the op table (tests/core/backend_ops_test.cc): an op run on a
// backend's device from host inputs, against a double-precision reference
// on the host. Outputs are float32 or int32 tensors; both compare as
// doubles.
#ifndef STRATA_TESTS_CORE_OP_TABLE_H_
#define STRATA_TESTS_CORE_OP_TABLE_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ops/backend.h"
#include "tests/core/backend_test_support.h"

namespace strata::testing {

struct OpRow {
  std::string name;
  std::function<Tensors()> inputs;  // host tensors
  // The op on `b` over device copies of the inputs; returns its output(s) on the host.
  std::function<absl::StatusOr<Tensors>(const Backend& b, const Tensors& in)> run;
  std::function<std::vector<std::vector<double>>(const Tensors& in)> reference;
  // Largest absolute difference allowed from the reference.
  double tolerance = 1e-5;
};

// Runs `op` on device copies of `in` and downloads the tensors named by `outputs`.
inline absl::StatusOr<Tensors> OnDevice(const Backend& b, const Tensors& in,
                                        std::vector<int> outputs,
                                        const std::function<absl::Status(const Tensors&)>& op) {
  absl::StatusOr<Tensors> d = UploadAll(b, in);
  if (!d.ok()) return d.status();
  if (absl::Status s = op(*d); !s.ok()) return s;
  Tensors out;
  for (int i : outputs) {
    absl::StatusOr<Tensor> h = b.Download((*d)[i]);
    if (!h.ok()) return h.status();
    out.push_back(*std::move(h));
  }
  return out;
}

// The elements of a float32 or int32 host tensor.
inline std::vector<double> Doubles(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    v[i] = t.dtype() == DType::kI32 ? t.i32_data()[i] : t.data()[i];
  }
  return v;
}

}  // namespace strata::testing

#endif  // STRATA_TESTS_CORE_OP_TABLE_H_
