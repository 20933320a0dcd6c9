// BatchNorm2d over NHWC images, computed by a backend's BatchNorm kernel
// (core/ops/layer_kernels.h: oneDNN on the host, cuDNN on a GPU), one per
// batch size; its parameters and statistics live on the backend's device.
//
// Training: normalise with the batch mean and (biased) variance per channel,
// and update running_mean / running_var (unbiased) with `momentum`, as
// PyTorch does. Evaluation: normalise with the running statistics.
// Parameters: weight (gamma) and bias (beta), {C}; state: running_mean,
// running_var, {C}. It can absorb a following ReLU (core/layers/fusion.h):
// then it outputs max(y, 0) and masks the gradient in its own pass.
#ifndef STRATA_CORE_LAYERS_BATCHNORM2D_H_
#define STRATA_CORE_LAYERS_BATCHNORM2D_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/kernel_cache.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

struct BatchNormOptions {
  float epsilon = 1e-5f;
  float momentum = 0.1f;
};

class BatchNorm2d final : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<BatchNorm2d>> Create(
      std::string name, const Shape& input_shape, const BatchNormOptions& options,
      const Backend& backend = HostBackend());
  ~BatchNorm2d() override;
  const char* kind() const override { return "batchnorm2d"; }
  Shape output_shape() const override { return input_shape(); }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  std::vector<StateBuffer*> state_buffers() override { return {&running_mean_, &running_var_}; }
  void InitParameters(Rng& rng) override;
  bool AbsorbFollowingRelu() override;

 private:
  BatchNorm2d(std::string name, const Shape& input_shape, const BatchNormOptions& options,
              const Backend& backend);
  BatchNormShape ShapeFor(int64_t batch) const;
  BatchNormKernel& KernelFor(int64_t batch);
  // gamma 1, beta 0, running mean 0 and variance 1 (PyTorch's start).
  void ResetValues();

  const Backend& backend_;
  BatchNormOptions options_;
  bool fused_relu_ = false;
  Parameter weight_;
  Parameter bias_;
  StateBuffer running_mean_;
  StateBuffer running_var_;
  KernelCache<BatchNormKernel> kernels_;
  // Of the training Forward, for Backward (output_ with a fused ReLU only).
  Tensor input_, output_;
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_BATCHNORM2D_H_
