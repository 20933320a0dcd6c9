#include "core/layers/batchnorm2d.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<BatchNorm2d>> BatchNorm2d::Create(std::string name,
                                                                 const Shape& input_shape,
                                                                 const BatchNormOptions& options,
                                                                 const Backend& backend) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("batchnorm2d needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (!(options.epsilon > 0.0f) || !(options.momentum >= 0.0f && options.momentum <= 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batchnorm2d needs epsilon > 0 and 0 <= momentum <= 1; got epsilon=", options.epsilon,
        " momentum=", options.momentum));
  }
  return std::unique_ptr<BatchNorm2d>(
      new BatchNorm2d(std::move(name), input_shape, options, backend));
}

BatchNorm2d::BatchNorm2d(std::string name, const Shape& input_shape,
                         const BatchNormOptions& options, const Backend& backend)
    : Layer(std::move(name), input_shape), backend_(backend), options_(options) {
  const Shape channels{input_shape[2]};
  weight_ = ZeroParameter(this->name() + ".weight", channels, backend);
  bias_ = ZeroParameter(this->name() + ".bias", channels, backend);
  running_mean_ = {this->name() + ".running_mean", backend.Zeros(channels)};
  running_var_ = {this->name() + ".running_var", backend.Empty(channels)};
  ResetValues();
}

BatchNorm2d::~BatchNorm2d() = default;

void BatchNorm2d::InitParameters(Rng&) { ResetValues(); }

void BatchNorm2d::ResetValues() {
  STRATA_CHECK_OK(backend_.Fill(1.0f, weight_.value));
  STRATA_CHECK_OK(backend_.Fill(0.0f, bias_.value));
  STRATA_CHECK_OK(backend_.Fill(0.0f, running_mean_.value));
  STRATA_CHECK_OK(backend_.Fill(1.0f, running_var_.value));
}

bool BatchNorm2d::AbsorbFollowingRelu() {
  STRATA_CHECK(kernels_.empty(), "BatchNorm2d::AbsorbFollowingRelu after the first Forward");
  fused_relu_ = true;
  return true;
}

BatchNormKernel& BatchNorm2d::KernelFor(int64_t batch) {
  absl::StatusOr<BatchNormKernel*> kernel =
      kernels_.For(batch, [this](int64_t b) { return backend_.MakeBatchNorm(ShapeFor(b)); });
  STRATA_CHECK_OK(kernel.status());
  return **kernel;
}

BatchNormShape BatchNorm2d::ShapeFor(int64_t batch) const {
  BatchNormShape s;
  s.batch = batch;
  s.height = input_shape()[0];
  s.width = input_shape()[1];
  s.channels = input_shape()[2];
  s.epsilon = options_.epsilon;
  s.momentum = options_.momentum;
  s.fused_relu = fused_relu_;
  return s;
}

Tensor BatchNorm2d::Forward(const Tensor& input, bool training) {
  BatchNormKernel& kernel = KernelFor(input.dim(0));
  Tensor output = backend_.Empty(input.shape());
  STRATA_CHECK_OK(kernel.Forward(input, weight_.value, bias_.value, running_mean_.value,
                                 running_var_.value, output, training));
  if (!training) return output;
  input_ = input;
  if (fused_relu_) output_ = output;  // the ReLU's mask, on a device that needs it
  return output;
}

Tensor BatchNorm2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "BatchNorm2d::Backward without a training Forward");
  BatchNormKernel& kernel = KernelFor(input_.dim(0));
  // The kernels compute the input's gradient together with the parameters'.
  Tensor grad_input = backend_.Empty(input_.shape());
  STRATA_CHECK_OK(kernel.Backward(input_, output_, weight_.value, bias_.value, grad_output,
                                  weight_.grad, bias_.grad, grad_input));
  input_ = output_ = Tensor();
  return need_input_grad ? grad_input : Tensor();
}

}  // namespace strata
