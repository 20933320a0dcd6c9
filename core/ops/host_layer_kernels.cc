// The CPU backend's layer kernels: oneDNN's (core/ops/cpu), each call
// through the backend's OpenOperands, so that the checking device runs them
// on its guarded memory too.
#include <memory>

#include "core/ops/cpu/dnnl_batchnorm.h"
#include "core/ops/cpu/dnnl_convolution.h"
#include "core/ops/cpu/dnnl_pooling.h"
#include "core/ops/cpu_backend.h"
#include "core/status.h"

namespace strata {

class HostConvolution final : public ConvolutionKernel {
 public:
  HostConvolution(const CpuBackend& backend, std::unique_ptr<DnnlConvolution> kernel)
      : backend_(backend), kernel_(std::move(kernel)) {}
  std::string algorithm() const override {
    return kernel_->algorithm() == ConvAlgorithm::kWinograd ? "winograd" : "direct";
  }
  absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& output, bool training) override {
    STRATA_ASSIGN_OR_RETURN(
        CpuBackend::OperandAccess access,
        backend_.OpenOperands("convolution", {&input, &weight, &bias, &output}));
    kernel_->Forward(input, weight, bias, output, training);
    return absl::OkStatus();
  }
  absl::Status Backward(const Tensor& input, const Tensor& weight, const Tensor& grad_output,
                        const Tensor& grad_weight, const Tensor& grad_bias,
                        const Tensor& grad_input) override {
    STRATA_ASSIGN_OR_RETURN(
        CpuBackend::OperandAccess access,
        backend_.OpenOperands("convolution_backward", {&input, &weight, &grad_output, &grad_weight,
                                                       &grad_bias, &grad_input}));
    kernel_->Backward(input, weight, grad_output, grad_weight, grad_bias, grad_input);
    return absl::OkStatus();
  }

 private:
  const CpuBackend& backend_;
  std::unique_ptr<DnnlConvolution> kernel_;
};

class HostPooling final : public PoolingKernel {
 public:
  HostPooling(const CpuBackend& backend, const PoolingShape& shape)
      : backend_(backend), kernel_(shape) {}
  absl::Status Forward(const Tensor& input, const Tensor& output, bool training) override {
    STRATA_ASSIGN_OR_RETURN(CpuBackend::OperandAccess access,
                            backend_.OpenOperands("pooling", {&input, &output}));
    kernel_.Forward(input, output, training);
    return absl::OkStatus();
  }
  absl::Status Backward(const Tensor& grad_output, const Tensor& grad_input) override {
    STRATA_ASSIGN_OR_RETURN(CpuBackend::OperandAccess access,
                            backend_.OpenOperands("pooling_backward", {&grad_output, &grad_input}));
    kernel_.Backward(grad_output, grad_input);
    return absl::OkStatus();
  }

 private:
  const CpuBackend& backend_;
  DnnlPooling kernel_;
};

class HostBatchNorm final : public BatchNormKernel {
 public:
  HostBatchNorm(const CpuBackend& backend, const BatchNormShape& shape)
      : backend_(backend), kernel_(shape) {}
  absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, const Tensor& output,
                       bool training) override {
    STRATA_ASSIGN_OR_RETURN(
        CpuBackend::OperandAccess access,
        backend_.OpenOperands("batchnorm",
                              {&input, &weight, &bias, &running_mean, &running_var, &output}));
    if (training) {
      kernel_.ForwardTraining(input, weight, bias, running_mean, running_var, output);
    } else {
      kernel_.ForwardInference(input, weight, bias, running_mean, running_var, output);
    }
    return absl::OkStatus();
  }
  absl::Status Backward(const Tensor& input, const Tensor& output, const Tensor& weight,
                        const Tensor& bias, const Tensor& grad_output, const Tensor& grad_weight,
                        const Tensor& grad_bias, const Tensor& grad_input) override {
    STRATA_ASSIGN_OR_RETURN(
        CpuBackend::OperandAccess access,
        backend_.OpenOperands("batchnorm_backward", {&input, &output, &weight, &bias, &grad_output,
                                                     &grad_weight, &grad_bias, &grad_input}));
    kernel_.Backward(input, weight, bias, grad_output, grad_weight, grad_bias, grad_input);
    return absl::OkStatus();
  }

 private:
  const CpuBackend& backend_;
  DnnlBatchNorm kernel_;
};

absl::StatusOr<std::unique_ptr<ConvolutionKernel>> CpuBackend::MakeConvolution(
    const ConvolutionShape& shape) const {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DnnlConvolution> kernel, DnnlConvolution::Create(shape));
  return std::unique_ptr<ConvolutionKernel>(new HostConvolution(*this, std::move(kernel)));
}

absl::StatusOr<std::unique_ptr<PoolingKernel>> CpuBackend::MakePooling(
    const PoolingShape& shape) const {
  return std::unique_ptr<PoolingKernel>(new HostPooling(*this, shape));
}

absl::StatusOr<std::unique_ptr<BatchNormKernel>> CpuBackend::MakeBatchNorm(
    const BatchNormShape& shape) const {
  return std::unique_ptr<BatchNormKernel>(new HostBatchNorm(*this, shape));
}

}  // namespace strata
