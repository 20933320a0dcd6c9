// DnnlBatchNorm: BatchNorm over NHWC images for one batch size on the host,
// through oneDNN. Training normalises with the batch mean and (biased)
// variance per channel and updates the running statistics (the unbiased
// variance, as PyTorch keeps it); inference uses the running statistics.
// With fused_relu the output is max(y, 0) and Backward masks the gradient
// alike, from a bit mask oneDNN keeps.
#ifndef STRATA_CORE_OPS_CPU_DNNL_BATCHNORM_H_
#define STRATA_CORE_OPS_CPU_DNNL_BATCHNORM_H_

#include <memory>

#include "core/ops/shared/kernel_shapes.h"
#include "core/tensor/tensor.h"

namespace strata {

class DnnlBatchNorm {
 public:
  explicit DnnlBatchNorm(const BatchNormShape& shape);
  ~DnnlBatchNorm();
  // Tensors {C} but input and output ({N, H, W, C}); weight is gamma, bias beta.
  void ForwardTraining(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, const Tensor& output);
  void ForwardInference(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Tensor& running_mean, const Tensor& running_var,
                        const Tensor& output);
  // The gradients of weight, bias (overwritten) and input, after a
  // training Forward of `input`.
  void Backward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                const Tensor& grad_output, const Tensor& grad_weight, const Tensor& grad_bias,
                const Tensor& grad_input);

 private:
  struct Kernels;
  BatchNormShape shape_;
  std::unique_ptr<Kernels> kernels_;
  Tensor batch_mean_, batch_var_;  // from the training Forward
  Tensor relu_mask_;               // oneDNN's workspace, with fused_relu
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_DNNL_BATCHNORM_H_
