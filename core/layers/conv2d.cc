#include "core/layers/conv2d.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

const char* ConvAlgorithmName(ConvAlgorithm algorithm) {
  switch (algorithm) {
    case ConvAlgorithm::kAuto:
      return "auto";
    case ConvAlgorithm::kDirect:
      return "direct";
    case ConvAlgorithm::kWinograd:
      return "winograd";
  }
  return "?";
}

absl::StatusOr<ConvAlgorithm> ParseConvAlgorithm(const std::string& name) {
  for (ConvAlgorithm a : {ConvAlgorithm::kAuto, ConvAlgorithm::kDirect, ConvAlgorithm::kWinograd}) {
    if (name == ConvAlgorithmName(a)) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown convolution algorithm \"", name, "\" (auto, direct or winograd)"));
}

absl::StatusOr<std::unique_ptr<Conv2d>> Conv2d::Create(std::string name, const Shape& input_shape,
                                                       const Conv2dOptions& o,
                                                       const Backend& backend) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("conv2d needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (o.out_channels <= 0 || o.kernel <= 0 || o.stride <= 0 || o.padding < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv2d needs out_channels, kernel, stride > 0 and padding >= 0; got out_channels=",
        o.out_channels, " kernel=", o.kernel, " stride=", o.stride, " padding=", o.padding));
  }
  if (input_shape[0] + 2 * o.padding < o.kernel || input_shape[1] + 2 * o.padding < o.kernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "conv2d kernel ", o.kernel, " is larger than the padded input ", input_shape.ToString()));
  }
  std::unique_ptr<Conv2d> conv(new Conv2d(std::move(name), input_shape, o, backend));
  // An explicit algorithm the backend may lack is refused now, not at the
  // first step; other kernels are made on first use (making one compiles
  // it, which would slow every process's start).
  if (o.algorithm == ConvAlgorithm::kWinograd) STRATA_RETURN_IF_ERROR(conv->KernelFor(1).status());
  return conv;
}

Conv2d::Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options,
               const Backend& backend)
    : Layer(std::move(name), input_shape), backend_(backend), options_(options) {
  const ConvolutionShape s = ShapeFor(1);
  output_shape_ = Shape{s.out_height(), s.out_width(), options.out_channels};
  weight_ =
      ZeroParameter(this->name() + ".weight",
                    {options.out_channels, s.in_channels, options.kernel, options.kernel}, backend);
  if (options.bias) {
    bias_ = ZeroParameter(this->name() + ".bias", {options.out_channels}, backend);
  }
}

Conv2d::~Conv2d() = default;

std::vector<Parameter*> Conv2d::parameters() {
  if (options_.bias) return {&weight_, &bias_};
  return {&weight_};
}

void Conv2d::InitParameters(Rng& rng) {
  // PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
  const float bound = 1.0f / std::sqrt(static_cast<float>(weight_.value.shape().inner()));
  FillUniform(weight_.value, rng, bound);
  if (options_.bias) FillUniform(bias_.value, rng, bound);
}

int64_t Conv2d::ForwardFlopsPerSample() const {
  return 2 * output_shape_.numel() * input_shape()[2] * options_.kernel * options_.kernel;
}

ConvolutionShape Conv2d::ShapeFor(int64_t batch) const {
  ConvolutionShape s;
  s.batch = batch;
  s.height = input_shape()[0];
  s.width = input_shape()[1];
  s.in_channels = input_shape()[2];
  s.out_channels = options_.out_channels;
  s.kernel = options_.kernel;
  s.stride = options_.stride;
  s.padding = options_.padding;
  s.bias = options_.bias;
  s.algorithm = options_.algorithm;
  return s;
}

absl::StatusOr<ConvolutionKernel*> Conv2d::KernelFor(int64_t batch) {
  return kernels_.For(batch, [this](int64_t b) { return backend_.MakeConvolution(ShapeFor(b)); });
}

std::string Conv2d::AlgorithmFor(int64_t batch) {
  absl::StatusOr<ConvolutionKernel*> kernel = KernelFor(batch);
  STRATA_CHECK_OK(kernel.status());
  return (*kernel)->algorithm();
}

Tensor Conv2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  absl::StatusOr<ConvolutionKernel*> kernel = KernelFor(batch);
  STRATA_CHECK_OK(kernel.status());
  Tensor output = backend_.Empty(BatchShape(batch, output_shape_));
  STRATA_CHECK_OK((*kernel)->Forward(input, weight_.value, bias_.value, output, training));
  if (training) input_ = input;
  return output;
}

Tensor Conv2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "Conv2d::Backward without a training Forward");
  const int64_t batch = grad_output.dim(0);
  absl::StatusOr<ConvolutionKernel*> kernel = KernelFor(batch);
  STRATA_CHECK_OK(kernel.status());
  Tensor grad_input;
  if (need_input_grad) grad_input = backend_.Empty(BatchShape(batch, input_shape()));
  STRATA_CHECK_OK((*kernel)->Backward(input_, weight_.value, grad_output, weight_.grad, bias_.grad,
                                      grad_input));
  input_ = Tensor();
  return grad_input;
}

}  // namespace strata
