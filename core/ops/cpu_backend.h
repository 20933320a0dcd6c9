// The CPU backend (core/ops/backend.h): the element-wise kernels of
// core/ops/cpu/elementwise.h on host tensors.
#ifndef STRATA_CORE_OPS_CPU_BACKEND_H_
#define STRATA_CORE_OPS_CPU_BACKEND_H_

#include "core/ops/backend.h"

namespace strata {

class CpuBackend final : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::kCpu; }
  absl::StatusOr<Tensor> Upload(const Tensor& host) const override { return host.Clone(); }
  absl::StatusOr<Tensor> Download(const Tensor& tensor) const override { return tensor.Clone(); }

  absl::Status Relu(const Tensor& x, const Tensor& y) const override;
  absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override;
  absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const override;
  absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const override;
  absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const override;
  absl::Status Scale(float alpha, const Tensor& x) const override;
  absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const override;
  absl::Status SumRows(const Tensor& m, const Tensor& sums) const override;
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_BACKEND_H_
