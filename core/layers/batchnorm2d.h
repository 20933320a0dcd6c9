// BatchNorm2d over NHWC images, through oneDNN.
//
// Training: normalise with the batch mean and (biased) variance per channel,
// and update running_mean / running_var (unbiased) with `momentum`, as
// PyTorch does. Evaluation: normalise with the running statistics.
// Parameters: weight (gamma) and bias (beta), {C}; state: running_mean,
// running_var, {C}. It can absorb a following ReLU (core/layers/fusion.h):
// then it outputs max(y, 0) and masks the gradient in its own pass, keeping
// a bit mask of the rectified outputs from the training Forward.
#ifndef STRATA_CORE_LAYERS_BATCHNORM2D_H_
#define STRATA_CORE_LAYERS_BATCHNORM2D_H_

#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"

namespace strata {

struct BatchNormOptions {
  float epsilon = 1e-5f;
  float momentum = 0.1f;
};

class BatchNorm2d final : public Layer {
 public:
  static absl::StatusOr<std::unique_ptr<BatchNorm2d>> Create(std::string name,
                                                             const Shape& input_shape,
                                                             const BatchNormOptions& options);
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
  struct Kernels;
  BatchNorm2d(std::string name, const Shape& input_shape, const BatchNormOptions& options);
  Kernels& KernelsFor(int64_t batch);

  BatchNormOptions options_;
  bool fused_relu_ = false;
  Parameter weight_;
  Parameter bias_;
  StateBuffer running_mean_;
  StateBuffer running_var_;
  std::map<int64_t, std::unique_ptr<Kernels>> kernels_;
  // Saved by the training Forward for Backward.
  Tensor input_, batch_mean_, batch_var_;
  Tensor relu_mask_;  // oneDNN's workspace, when fused_relu_
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_BATCHNORM2D_H_
