#include "core/layers/activation.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {

Tensor Relu::Forward(const Tensor& input, bool training) {
  if (absorbed_) return input;
  Tensor output = Tensor::Empty(input.shape(), DType::kF32, backend_.device());
  STRATA_CHECK_OK(backend_.Relu(input, output));
  if (training) output_ = output;
  return output;
}

Tensor Relu::Backward(const Tensor& grad_output, bool need_input_grad) {
  if (absorbed_) return need_input_grad ? grad_output : Tensor();
  STRATA_CHECK(output_.defined(), "Relu::Backward without a training Forward");
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = Tensor::Empty(grad_output.shape(), DType::kF32, backend_.device());
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
  if (backend.device() != Device::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dropout draws its masks on the host and runs on the cpu backend, not ", backend.name()));
  }
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
  mask_ = Tensor::Empty(input.shape());
  float* mask = mask_.data();
  const float keep_scale = 1.0f / (1.0f - p_);
  // 64 random bits give four 16-bit uniform draws.
  const uint32_t threshold = static_cast<uint32_t>(p_ * 65536.0f);
  const int64_t n = input.numel();
  for (int64_t i = 0; i < n; i += 4) {
    uint64_t bits = rng_.NextU64();
    for (int64_t j = i; j < std::min(n, i + 4); ++j, bits >>= 16) {
      mask[j] = (bits & 0xFFFF) < threshold ? 0.0f : keep_scale;
    }
  }
  Tensor output = Tensor::Empty(input.shape());
  STRATA_CHECK_OK(backend_.Multiply(input, mask_, output));
  return output;
}

Tensor Dropout::Backward(const Tensor& grad_output, bool need_input_grad) {
  if (!need_input_grad) return Tensor();
  if (!mask_.defined()) return grad_output;  // p == 0: identity
  Tensor grad_input = Tensor::Empty(grad_output.shape());
  STRATA_CHECK_OK(backend_.Multiply(grad_output, mask_, grad_input));
  return grad_input;
}

}  // namespace strata
