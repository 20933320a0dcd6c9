#include "core/layers/linear.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/ops/cpu/elementwise.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<Linear>> Linear::Create(std::string name, const Shape& input_shape,
                                                       int64_t out_features,
                                                       const Backend& backend) {
  if (backend.device() != Device::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("linear multiplies with oneDNN on the host and runs on the cpu backend, not ",
                     backend.name()));
  }
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
  weight_ = ZeroParameter(this->name() + ".weight", {out_features_, in_features_});
  bias_ = ZeroParameter(this->name() + ".bias", {out_features_});
}

void Linear::InitParameters(Rng& rng) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in_features_));
  FillUniform(weight_.value, rng, bound);
  FillUniform(bias_.value, rng, bound);
}

Tensor Linear::Forward(const Tensor& input, bool training) {
  const int64_t batch = input.dim(0);
  Tensor output = Tensor::Empty({batch, out_features_});
  STRATA_CHECK_OK(backend_.BroadcastRows(bias_.value, output));
  Sgemm('N', 'T', batch, out_features_, in_features_, 1.0f, input.data(), in_features_,
        weight_.value.data(), in_features_, 1.0f, output.data(), out_features_);
  if (training) input_ = input;
  return output;
}

Tensor Linear::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "Linear::Backward without a training Forward");
  const int64_t batch = input_.dim(0);
  // dW = dY^T X ; db = column sums of dY ; dX = dY W.
  Sgemm('T', 'N', out_features_, in_features_, batch, 1.0f, grad_output.data(), out_features_,
        input_.data(), in_features_, accumulate_ ? 1.0f : 0.0f, weight_.grad.data(), in_features_);
  if (accumulate_) {  // the layer computes on the host (Create)
    SumRows(grad_output.data(), bias_.grad.data(), batch, out_features_, /*accumulate=*/true);
  } else {
    STRATA_CHECK_OK(backend_.SumRows(grad_output, bias_.grad));
  }
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = Tensor::Empty(input_.shape());
    Sgemm('N', 'N', batch, in_features_, out_features_, 1.0f, grad_output.data(), out_features_,
          weight_.value.data(), in_features_, 0.0f, grad_input.data(), in_features_);
  }
  input_ = Tensor();
  return grad_input;
}

}  // namespace strata
