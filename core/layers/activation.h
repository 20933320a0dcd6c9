// ReLU, Flatten and Dropout. ReLU and Dropout compute through a Backend
// (core/ops/backend.h; the host's unless given another) on tensors of its
// device; Flatten is a view on any device.
#ifndef STRATA_CORE_LAYERS_ACTIVATION_H_
#define STRATA_CORE_LAYERS_ACTIVATION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

// y = max(x, 0), any shape.
class Relu final : public Layer {
 public:
  Relu(std::string name, const Shape& input_shape, const Backend& backend = HostBackend())
      : Layer(std::move(name), input_shape), backend_(backend) {}
  const char* kind() const override { return "relu"; }
  Shape output_shape() const override { return input_shape(); }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;

  // Passes values and gradients through from now on: the layer before this
  // one has absorbed its work (Layer::AbsorbFollowingRelu), so its input is
  // rectified already.
  void MarkAbsorbed() { absorbed_ = true; }
  bool absorbed() const { return absorbed_; }

 private:
  const Backend& backend_;
  bool absorbed_ = false;
  Tensor output_;
};

// Reshapes each sample to a vector (free: NHWC is already contiguous).
class Flatten final : public Layer {
 public:
  Flatten(std::string name, const Shape& input_shape) : Layer(std::move(name), input_shape) {}
  const char* kind() const override { return "flatten"; }
  Shape output_shape() const override { return Shape{input_shape().numel()}; }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
};

// Inverted dropout: in training each element is zeroed with probability p and
// the rest scaled by 1/(1-p); in evaluation it is the identity. The k-th
// training Forward draws its mask from (seed, k) alone (Backend::DropoutMask),
// so a run is reproducible and every backend draws the same masks.
class Dropout final : public Layer {
 public:
  // Fails unless 0 <= p < 1.
  static absl::StatusOr<std::unique_ptr<Dropout>> Create(std::string name, const Shape& input_shape,
                                                         float p, uint64_t seed,
                                                         const Backend& backend = HostBackend());
  const char* kind() const override { return "dropout"; }
  Shape output_shape() const override { return input_shape(); }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;

 private:
  Dropout(std::string name, const Shape& input_shape, float p, uint64_t seed,
          const Backend& backend)
      : Layer(std::move(name), input_shape), backend_(backend), p_(p), seed_(seed) {}
  const Backend& backend_;
  float p_;
  uint64_t seed_;
  uint64_t masks_drawn_ = 0;
  Tensor mask_;  // 0 or 1/(1-p) per element, from the last training Forward
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_ACTIVATION_H_
