// The CPU backend (core/ops/backend.h): the CPU kernels of core/ops/cpu on
// host tensors. The checking device (checking_backend.h) runs these very
// kernels on its guarded memory, through the OpenOperands hook.
#ifndef STRATA_CORE_OPS_CPU_BACKEND_H_
#define STRATA_CORE_OPS_CPU_BACKEND_H_

#include <initializer_list>

#include "absl/functional/any_invocable.h"
#include "core/ops/backend.h"

namespace strata {

class CpuBackend : public Backend {
 public:
  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::kCpu; }
  absl::StatusOr<Tensor> Upload(const Tensor& host) const override;
  absl::StatusOr<Tensor> Download(const Tensor& tensor) const override;

  absl::Status Fill(float value, const Tensor& x) const override;
  absl::Status Copy(const Tensor& src, const Tensor& dst) const override;
  absl::Status Relu(const Tensor& x, const Tensor& y) const override;
  absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override;
  absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const override;
  absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const override;
  absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const override;
  absl::Status Scale(float alpha, const Tensor& x) const override;
  absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const override;
  absl::Status SumRows(const Tensor& m, const Tensor& sums, bool accumulate) const override;
  absl::Status Gemm(bool transpose_a, bool transpose_b, float alpha, const Tensor& a,
                    const Tensor& b, float beta, const Tensor& c) const override;
  absl::Status SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float grad_scale,
                                   const Tensor& row_loss, const Tensor& row_correct,
                                   const Tensor& grad) const override;
  absl::Status DropoutMask(uint64_t seed, uint64_t stream, float p,
                           const Tensor& mask) const override;
  absl::Status ApplyUpdate(const UpdateRule& rule, const Tensor& param, const Tensor& grad,
                           const Tensor& state, float lr, int64_t step,
                           float grad_scale) const override;
  // Routing (core/ops/cpu/routing_kernels.h).
  absl::Status TopKGate(const Tensor& logits, bool normalize, const Tensor& probs,
                        const Tensor& expert, const Tensor& gate) const override;
  absl::Status TopKGateBackward(const Tensor& probs, const Tensor& expert, const Tensor& gate,
                                const Tensor& grad_gate, const Tensor& prob_grad, bool normalize,
                                const Tensor& grad_logits) const override;
  absl::Status RankChoices(const Tensor& probs, const Tensor& expert, bool prioritize_confident,
                           const Tensor& rank, const Tensor& need) const override;
  absl::Status GateLoad(const Tensor& probs, const Tensor& expert,
                        const Tensor& load) const override;
  absl::Status DispatchTokens(const Tensor& expert, const Tensor& rank, const Tensor& x,
                              const Tensor& slots) const override;
  absl::Status CombineTokens(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                             const Tensor& rows, const Tensor& y) const override;
  absl::Status CombineTokensBackward(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                                     const Tensor& grad_y, const Tensor& rows,
                                     const Tensor& grad_rows,
                                     const Tensor& grad_gate) const override;
  // oneDNN's kernels (core/ops/host_layer_kernels.cc).
  absl::StatusOr<std::unique_ptr<ConvolutionKernel>> MakeConvolution(
      const ConvolutionShape& shape) const override;
  absl::StatusOr<std::unique_ptr<PoolingKernel>> MakePooling(
      const PoolingShape& shape) const override;
  absl::StatusOr<std::unique_ptr<BatchNormKernel>> MakeBatchNorm(
      const BatchNormShape& shape) const override;

 protected:
  friend class HostConvolution;
  friend class HostPooling;
  friend class HostBatchNorm;

  // Held while one op's kernel runs; what it was made with (closing the
  // operands again) runs when it goes.
  class OperandAccess {
   public:
    OperandAccess() = default;
    explicit OperandAccess(absl::AnyInvocable<void()> close) : close_(std::move(close)) {}
    OperandAccess(OperandAccess&&) = default;
    OperandAccess& operator=(OperandAccess&&) = delete;
    ~OperandAccess() {
      if (close_) close_();
    }

   private:
    absl::AnyInvocable<void()> close_;
  };

  // InvalidArgument naming `op` unless every defined operand lives on this
  // backend's device as float32 (the ones in `int32_operands` as int32);
  // then makes them addressable by the host until the access goes. The
  // CPU's memory always is.
  virtual absl::StatusOr<OperandAccess> OpenOperands(
      const char* op, std::initializer_list<const Tensor*> operands,
      std::initializer_list<const Tensor*> int32_operands = {}) const;

  // Checks that the operands live on this backend's device (InvalidArgument
  // naming `op` otherwise).
  absl::Status CheckDevice(const char* op, std::initializer_list<const Tensor*> operands,
                           std::initializer_list<const Tensor*> int32_operands) const;
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_BACKEND_H_
