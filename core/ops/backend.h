// Backend: one device's implementation of the element-wise ops that
// training runs outside oneDNN's layers, behind one interface so that an op
// is written once per device and tested once for all of them
// (tests/core/backend_ops_test.cc runs every op on every backend present
// against a reference, and every backward against finite differences of
// its forward).
//
// The CPU backend is always registered. The CUDA backend registers itself
// (RegisterCudaBackend, core/ops/cuda/cuda_backend.h) where it is built and
// a device is present. An op a backend lacks returns Unimplemented, naming
// the op and the backend; the table test lists those as not run.
//
// Tensors passed to a backend's ops live on its device (Upload/Download
// move them); each op checks that its operands' sizes agree
// (InvalidArgument otherwise). Thread safety: backends hold no state per
// call; the registry is filled at start-up.
#ifndef STRATA_CORE_OPS_BACKEND_H_
#define STRATA_CORE_OPS_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"

namespace strata {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual Device device() const = 0;
  // A tensor on this backend's device with `host`'s values, and back.
  virtual absl::StatusOr<Tensor> Upload(const Tensor& host) const = 0;
  virtual absl::StatusOr<Tensor> Download(const Tensor& tensor) const = 0;

  // The ops (their meaning: core/ops/cpu/elementwise.h). In-place calls
  // are allowed where elementwise.h allows them.
  virtual absl::Status Relu(const Tensor& x, const Tensor& y) const;
  virtual absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const;
  virtual absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const;
  virtual absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const;
  virtual absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const;
  virtual absl::Status Scale(float alpha, const Tensor& x) const;
  // out {rows, cols}; bias {cols}.
  virtual absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const;
  // m {rows, cols}; sums {cols}.
  virtual absl::Status SumRows(const Tensor& m, const Tensor& sums) const;

 protected:
  // Unimplemented naming `op` and this backend.
  absl::Status Lacks(const char* op) const;
};

class BackendRegistry {
 public:
  // Holds the CPU backend from the start.
  static BackendRegistry& Global();
  // AlreadyExists for a second backend of one name.
  absl::Status Register(std::unique_ptr<Backend> backend);
  // NotFound naming the registered backends.
  absl::StatusOr<const Backend*> Find(const std::string& name) const;
  std::vector<const Backend*> backends() const;

 private:
  std::vector<std::unique_ptr<Backend>> backends_;
};

// The CPU backend of the global registry: what layers compute with unless
// they are given another.
const Backend& HostBackend();

// InvalidArgument naming `op` and both sizes unless a and b have as many
// elements.
absl::Status CheckSameSize(const char* op, const Tensor& a, const Tensor& b);
// InvalidArgument unless `matrix` is {rows, cols} and `row` has cols elements.
absl::Status CheckRowShape(const char* op, const Tensor& matrix, const Tensor& row);

}  // namespace strata

#endif  // STRATA_CORE_OPS_BACKEND_H_
