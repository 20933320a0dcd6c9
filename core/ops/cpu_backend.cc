#include "core/ops/cpu_backend.h"

#include <algorithm>

#include "core/ops/cpu/apply_update.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/ops/cpu/elementwise.h"
#include "core/ops/cpu/loss_rows.h"
#include "core/ops/cpu/routing_kernels.h"
#include "core/ops/shared/counter_random.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<Tensor> CpuBackend::Upload(const Tensor& host) const { return host.Clone(); }
absl::StatusOr<Tensor> CpuBackend::Download(const Tensor& tensor) const { return tensor.Clone(); }

absl::Status CpuBackend::CheckDevice(const char* op, std::initializer_list<const Tensor*> operands,
                                     std::initializer_list<const Tensor*> int32_operands) const {
  STRATA_RETURN_IF_ERROR(CheckOperands(op, device(), DType::kF32, operands));
  return CheckOperands(op, device(), DType::kI32, int32_operands);
}

absl::StatusOr<CpuBackend::OperandAccess> CpuBackend::OpenOperands(
    const char* op, std::initializer_list<const Tensor*> operands,
    std::initializer_list<const Tensor*> int32_operands) const {
  STRATA_RETURN_IF_ERROR(CheckDevice(op, operands, int32_operands));
  return OperandAccess();
}

absl::Status CpuBackend::Fill(float value, const Tensor& x) const {
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("fill", {&x}));
  std::fill(x.data(), x.data() + x.numel(), value);
  return absl::OkStatus();
}

absl::Status CpuBackend::Copy(const Tensor& src, const Tensor& dst) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("copy", src, dst));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("copy", {&src, &dst}));
  std::copy(src.data(), src.data() + src.numel(), dst.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::Relu(const Tensor& x, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu", x, y));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("relu", {&x, &y}));
  ReluForward(x.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dy));
  STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dx));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("relu_backward", {&y, &dy, &dx}));
  strata::ReluBackward(y.data(), dy.data(), dx.data(), y.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, mask));
  STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, y));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("multiply", {&x, &mask, &y}));
  strata::Multiply(x.data(), mask.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Add(const Tensor& a, const Tensor& b, const Tensor& out) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, b));
  STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, out));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("add", {&a, &b, &out}));
  strata::Add(a.data(), b.data(), out.data(), a.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Axpy(float alpha, const Tensor& x, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckSameSize("axpy", x, y));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("axpy", {&x, &y}));
  strata::Axpy(alpha, x.data(), y.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::Scale(float alpha, const Tensor& x) const {
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("scale", {&x}));
  strata::Scale(alpha, x.data(), x.numel());
  return absl::OkStatus();
}

absl::Status CpuBackend::BroadcastRows(const Tensor& bias, const Tensor& out) const {
  STRATA_RETURN_IF_ERROR(CheckRowShape("broadcast_rows", out, bias));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("broadcast_rows", {&bias, &out}));
  strata::BroadcastRows(bias.data(), out.data(), out.dim(0), out.dim(1));
  return absl::OkStatus();
}

absl::Status CpuBackend::SumRows(const Tensor& m, const Tensor& sums, bool accumulate) const {
  STRATA_RETURN_IF_ERROR(CheckRowShape("sum_rows", m, sums));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("sum_rows", {&m, &sums}));
  strata::SumRows(m.data(), sums.data(), m.dim(0), m.dim(1), accumulate);
  return absl::OkStatus();
}

absl::Status CpuBackend::Gemm(bool transpose_a, bool transpose_b, float alpha, const Tensor& a,
                              const Tensor& b, float beta, const Tensor& c) const {
  int64_t m = 0, n = 0, k = 0;
  STRATA_RETURN_IF_ERROR(CheckGemmShapes(transpose_a, transpose_b, a, b, c, &m, &n, &k));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("gemm", {&a, &b, &c}));
  if (m == 0 || n == 0) return absl::OkStatus();
  Sgemm(transpose_a ? 'T' : 'N', transpose_b ? 'T' : 'N', m, n, k, alpha, a.data(), a.dim(1),
        b.data(), b.dim(1), beta, c.data(), n);
  return absl::OkStatus();
}

absl::Status CpuBackend::SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels,
                                             float grad_scale, const Tensor& row_loss,
                                             const Tensor& row_correct, const Tensor& grad) const {
  STRATA_RETURN_IF_ERROR(CheckLossShapes(logits, labels, row_loss, row_correct, grad));
  STRATA_ASSIGN_OR_RETURN(
      OperandAccess access,
      OpenOperands("softmax_cross_entropy", {&logits, &row_loss, &row_correct, &grad}, {&labels}));
  SoftmaxCrossEntropyRows(logits.data(), labels.i32_data(), logits.dim(0), logits.dim(1),
                          grad_scale, row_loss.data(), row_correct.data(),
                          grad.defined() ? grad.data() : nullptr);
  return absl::OkStatus();
}

absl::Status CpuBackend::DropoutMask(uint64_t seed, uint64_t stream, float p,
                                     const Tensor& mask) const {
  STRATA_ASSIGN_OR_RETURN(OperandAccess access, OpenOperands("dropout_mask", {&mask}));
  float* out = mask.data();
  const int64_t n = mask.numel();
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = DropoutMaskValue(seed, stream, i, p);
  return absl::OkStatus();
}

absl::Status CpuBackend::ApplyUpdate(const UpdateRule& rule, const Tensor& param,
                                     const Tensor& grad, const Tensor& state, float lr,
                                     int64_t step, float grad_scale) const {
  STRATA_RETURN_IF_ERROR(CheckUpdateShapes(rule, param, grad, state));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("apply_update", {&param, &grad, &state}));
  ApplyUpdateRule(rule, param.data(), grad.data(), state.defined() ? state.data() : nullptr,
                  param.numel(), lr, step, grad_scale);
  return absl::OkStatus();
}

absl::Status CpuBackend::TopKGate(const Tensor& logits, bool normalize, const Tensor& probs,
                                  const Tensor& expert, const Tensor& gate) const {
  STRATA_RETURN_IF_ERROR(CheckGateShapes("topk_gate", expert, {&logits, &probs}, {&gate}));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("topk_gate", {&logits, &probs, &gate}, {&expert}));
  TopKGateRows(logits.data(), logits.dim(0), static_cast<int>(logits.dim(1)),
               static_cast<int>(expert.dim(1)), normalize, probs.data(), expert.i32_data(),
               gate.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::TopKGateBackward(const Tensor& probs, const Tensor& expert,
                                          const Tensor& gate, const Tensor& grad_gate,
                                          const Tensor& prob_grad, bool normalize,
                                          const Tensor& grad_logits) const {
  STRATA_RETURN_IF_ERROR(
      CheckGateBackwardShapes(probs, expert, gate, grad_gate, prob_grad, grad_logits));
  STRATA_ASSIGN_OR_RETURN(
      OperandAccess access,
      OpenOperands("topk_gate_backward", {&probs, &gate, &grad_gate, &prob_grad, &grad_logits},
                   {&expert}));
  TopKGateBackwardRows(probs.data(), expert.i32_data(), gate.data(), grad_gate.data(),
                       prob_grad.defined() ? prob_grad.data() : nullptr, probs.dim(0),
                       static_cast<int>(probs.dim(1)), static_cast<int>(expert.dim(1)), normalize,
                       grad_logits.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::RankChoices(const Tensor& probs, const Tensor& expert,
                                     bool prioritize_confident, const Tensor& rank,
                                     const Tensor& need) const {
  STRATA_RETURN_IF_ERROR(CheckGateShapes("rank_choices", expert, {&probs}, {&rank}));
  STRATA_RETURN_IF_ERROR(CheckRowShape("rank_choices", probs, need));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("rank_choices", {&probs}, {&expert, &rank, &need}));
  strata::RankChoices(probs.data(), expert.i32_data(), probs.dim(0), static_cast<int>(probs.dim(1)),
                      static_cast<int>(expert.dim(1)), prioritize_confident, rank.i32_data(),
                      need.i32_data());
  return absl::OkStatus();
}

absl::Status CpuBackend::GateLoad(const Tensor& probs, const Tensor& expert,
                                  const Tensor& load) const {
  STRATA_RETURN_IF_ERROR(CheckGateLoadShapes(probs, expert, load));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("gate_load", {&probs, &load}, {&expert}));
  strata::GateLoad(probs.data(), expert.i32_data(), probs.dim(0), static_cast<int>(probs.dim(1)),
                   static_cast<int>(expert.dim(1)), load.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::DispatchTokens(const Tensor& expert, const Tensor& rank, const Tensor& x,
                                        const Tensor& slots) const {
  STRATA_RETURN_IF_ERROR(CheckDispatchShapes("dispatch_tokens", expert, rank, x, slots));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("dispatch_tokens", {&x, &slots}, {&expert, &rank}));
  strata::DispatchTokens(RoutedChoicesOf(expert, rank, slots.dim(1)), x.data(), x.dim(1),
                         slots.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::CombineTokens(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                                       const Tensor& rows, const Tensor& y) const {
  STRATA_RETURN_IF_ERROR(CheckDispatchShapes("combine_tokens", expert, rank, y, rows));
  STRATA_RETURN_IF_ERROR(CheckGateShapes("combine_tokens", expert, {}, {&gate}));
  STRATA_ASSIGN_OR_RETURN(OperandAccess access,
                          OpenOperands("combine_tokens", {&gate, &rows, &y}, {&expert, &rank}));
  strata::CombineTokens(RoutedChoicesOf(expert, rank, rows.dim(1)),
                        gate.defined() ? gate.data() : nullptr, rows.data(), y.dim(1), y.data());
  return absl::OkStatus();
}

absl::Status CpuBackend::CombineTokensBackward(const Tensor& expert, const Tensor& rank,
                                               const Tensor& gate, const Tensor& grad_y,
                                               const Tensor& rows, const Tensor& grad_rows,
                                               const Tensor& grad_gate) const {
  STRATA_RETURN_IF_ERROR(
      CheckCombineBackwardShapes(expert, rank, gate, grad_y, rows, grad_rows, grad_gate));
  STRATA_ASSIGN_OR_RETURN(
      OperandAccess access,
      OpenOperands("combine_tokens_backward", {&gate, &grad_y, &rows, &grad_rows, &grad_gate},
                   {&expert, &rank}));
  strata::CombineTokensBackward(RoutedChoicesOf(expert, rank, rows.dim(1)), gate.data(),
                                grad_y.data(), rows.data(), grad_y.dim(1), grad_rows.data(),
                                grad_gate.data());
  return absl::OkStatus();
}

}  // namespace strata
