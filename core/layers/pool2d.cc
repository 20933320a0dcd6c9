#include "core/layers/pool2d.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<Pool2d>> Pool2d::Create(std::string name, const Shape& input_shape,
                                                       Pool2dOptions o, const Backend& backend) {
  if (input_shape.rank() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("pooling needs an image input [H, W, C], got ", input_shape.ToString()));
  }
  if (o.global) {
    o.kind = PoolKind::kAverage;
    o.kernel = input_shape[0];  // square windows only: see the check below
    o.stride = 1;
    o.padding = 0;
    if (input_shape[0] != input_shape[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "global average pooling supports square images only, got ", input_shape.ToString()));
    }
  }
  if (o.stride == 0) o.stride = o.kernel;
  if (o.kernel <= 0 || o.stride <= 0 || o.padding < 0 || 2 * o.padding >= o.kernel + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling needs kernel, stride > 0 and 0 <= padding <= kernel/2; got kernel=", o.kernel,
        " stride=", o.stride, " padding=", o.padding));
  }
  if (input_shape[0] + 2 * o.padding < o.kernel || input_shape[1] + 2 * o.padding < o.kernel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pooling window ", o.kernel, " is larger than the input ", input_shape.ToString()));
  }
  return std::unique_ptr<Pool2d>(new Pool2d(std::move(name), input_shape, o, backend));
}

Pool2d::Pool2d(std::string name, const Shape& input_shape, const Pool2dOptions& options,
               const Backend& backend)
    : Layer(std::move(name), input_shape), backend_(backend), options_(options) {
  const PoolingShape s = ShapeFor(1);
  spatial_output_ = Shape{s.out_height(), s.out_width(), input_shape[2]};
  output_shape_ = options.global ? Shape{input_shape[2]} : spatial_output_;
}

Pool2d::~Pool2d() = default;

const char* Pool2d::kind() const {
  if (options_.global) return "global_avgpool";
  return options_.kind == PoolKind::kMax ? "maxpool2d" : "avgpool2d";
}

PoolingShape Pool2d::ShapeFor(int64_t batch) const {
  PoolingShape s;
  s.batch = batch;
  s.height = input_shape()[0];
  s.width = input_shape()[1];
  s.channels = input_shape()[2];
  s.kind = options_.kind;
  s.kernel = options_.kernel;
  s.stride = options_.stride;
  s.padding = options_.padding;
  return s;
}

PoolingKernel& Pool2d::KernelFor(int64_t batch) {
  absl::StatusOr<PoolingKernel*> kernel =
      kernels_.For(batch, [this](int64_t b) { return backend_.MakePooling(ShapeFor(b)); });
  STRATA_CHECK_OK(kernel.status());
  return **kernel;
}

Tensor Pool2d::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Tensor output = backend_.Empty(BatchShape(batch, spatial_output_));
  STRATA_CHECK_OK(KernelFor(batch).Forward(input, output, training));
  if (training) trained_batch_ = batch;
  return output.View(BatchShape(batch, output_shape_));
}

Tensor Pool2d::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(trained_batch_ >= 0, "Pool2d::Backward without a training Forward");
  const int64_t batch = trained_batch_;
  trained_batch_ = -1;
  if (!need_input_grad) return Tensor();
  Tensor grad_input = backend_.Empty(BatchShape(batch, input_shape()));
  STRATA_CHECK_OK(
      KernelFor(batch).Backward(grad_output.View(BatchShape(batch, spatial_output_)), grad_input));
  return grad_input;
}

}  // namespace strata
