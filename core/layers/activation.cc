#include "core/layers/activation.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

Tensor Relu::Forward(const Tensor& input, bool training) {
  if (absorbed_) return input;
  Tensor output = backend_.Empty(input.shape());
  STRATA_CHECK_OK(backend_.Relu(input, output));
  if (training) output_ = output;
  return output;
}

Tensor Relu::Backward(const Tensor& grad_output, bool need_input_grad) {
  if (absorbed_) return need_input_grad ? grad_output : Tensor();
  STRATA_CHECK(output_.defined(), "Relu::Backward without a training Forward");
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = backend_.Empty(grad_output.shape());
    STRATA_CHECK_OK(backend_.ReluBackward(output_, grad_output, grad_input));
  }
  output_ = Tensor();
  return grad_input;
}

Tensor Flatten::Forward(const Tensor& input, bool training) {
  return input.View(Shape{input.dim(0), input.shape().inner()});
}

Tensor Flatten::Backward(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  return grad_output.View(BatchShape(grad_output.dim(0), input_shape()));
}

absl::StatusOr<std::unique_ptr<Dropout>> Dropout::Create(std::string name, const Shape& input_shape,
                                                         float p, uint64_t seed,
                                                         const Backend& backend) {
  if (!(p >= 0.0f && p < 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("dropout needs 0 <= p < 1, got ", p));
  }
  return std::unique_ptr<Dropout>(new Dropout(std::move(name), input_shape, p, seed, backend));
}

Tensor Dropout::Forward(const Tensor& input, bool training) {
  if (!training || p_ == 0.0f) {
    mask_ = Tensor();
    return input;
  }
  mask_ = backend_.Empty(input.shape());
  STRATA_CHECK_OK(backend_.DropoutMask(seed_, masks_drawn_++, p_, mask_));
  Tensor output = backend_.Empty(input.shape());
  STRATA_CHECK_OK(backend_.Multiply(input, mask_, output));
  return output;
}

Tensor Dropout::Backward(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  if (!mask_.defined()) return grad_output;  // p == 0: identity
  Tensor grad_input = backend_.Empty(grad_output.shape());
  STRATA_CHECK_OK(backend_.Multiply(grad_output, mask_, grad_input));
  return grad_input;
}

}  // namespace strata
