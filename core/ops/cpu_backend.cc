#include "core/ops/cpu_backend.h"

#include "core/ops/cpu/elementwise.h"
#include "core/status.h"

namespace strata {

absl::Status CpuBackend::Relu(const Tensor& x, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu", x, y));
  ReluForward(x.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dy));
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dx));
  strata::ReluBackward(y.data(), dy.data(), dx.data(), y.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, mask));
  STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, y));
  strata::Multiply(x.data(), mask.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, b));
  STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, out));
  strata::Add(a.data(), b.data(), out.data(), a.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Axpy(float alpha, const Tensor& x, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("axpy", x, y));
  strata::Axpy(alpha, x.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Scale(float alpha, const Tensor& x) const {
  strata::Scale(alpha, x.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::BroadcastRows(const Tensor& bias, const Tensor& out) const {
  STRATA_RETURN_IF_ERROR(CheckRowShape("broadcast_rows", out, bias));
  strata::BroadcastRows(bias.data(), out.data(), out.dim(0), out.dim(1));
  return absl::OkStatus();
}

absl::Status CpuBackend::SumRows(const Tensor& m, const Tensor& sums) const {
  STRATA_RETURN_IF_ERROR(CheckRowShape("sum_rows", m, sums));
  strata::SumRows(m.data(), sums.data(), m.dim(0), m.dim(1));
  return absl::OkStatus();
}

}  // namespace strata
