#include "core/layers/linear.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(std::string name, const Shape& input_shape,
                                                       int64_t out_features,
                                                       const Backend& backend) {
  if (input_shape.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("linear needs a vector input [F], got ",
                                                   input_shape.ToString(),
                                                   " (put a flatten layer before it)"));
  }
  if (out_features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear needs out_features > 0, got ", out_features));
  }
  return std::unique_ptr<Linear>(new Linear(std::move(name), input_shape, out_features, backend));
}

Linear::Linear(std::string name, const Shape& input_shape, int64_t out_features,
               const Backend& backend)
    : Layer(std::move(name), input_shape),
      backend_(backend),
      in_features_(input_shape[0]),
      out_features_(out_features) {
  weight_ = ZeroParameter(this->name() + ".weight", {out_features_, in_features_}, backend);
  bias_ = ZeroParameter(this->name() + ".bias", {out_features_}, backend);
}

void Linear::InitParameters(Rng& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features_));
  FillUniform(weight_.value, rng, bound);
  FillUniform(bias_.value, rng, bound);
}

Tensor Linear::Forward(const Tensor& input, bool training) {
  Tensor output = backend_.Empty({input.dim(0), out_features_});
  STRATA_CHECK_OK(backend_.BroadcastRows(bias_.value, output));
  STRATA_CHECK_OK(backend_.Gemm(false, true, 1.0f, input, weight_.value, 1.0f, output));
  if (training) input_ = input;
  return output;
}

Tensor Linear::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "Linear::Backward without a training Forward");
  // dW = dY^T X ; db = column sums of dY ; dX = dY W.
  STRATA_CHECK_OK(backend_.Gemm(true, false, 1.0f, grad_output, input_, accumulate_ ? 1.0f : 0.0f,
                                weight_.grad));
  STRATA_CHECK_OK(backend_.SumRows(grad_output, bias_.grad, accumulate_));
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = backend_.Empty(input_.shape());
    STRATA_CHECK_OK(
        backend_.Gemm(false, false, 1.0f, grad_output, weight_.value, 0.0f, grad_input));
  }
  input_ = Tensor();
  return grad_input;
}

}  // namespace strata
