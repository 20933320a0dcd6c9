// Linear: y = x W^T + b, computed through a Backend (core/ops/backend.h:
// its Gemm, the bias's broadcast and column sums) on the backend's device,
// where its parameters live.
//
// Parameters: weight {out_features, in_features} (the PyTorch order) and bias
// {out_features}. Input {in_features} per sample, output {out_features}.
#ifndef STRATA_CORE_LAYERS_LINEAR_H_
#define STRATA_CORE_LAYERS_LINEAR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

class Linear final : public Layer {
 public:
  // Fails unless the input is a vector {F} and out_features > 0.
  static absl::StatusOr<std::unique_ptr<Linear>> Create(std::string name, const Shape& input_shape,
                                                        int64_t out_features,
                                                        const Backend& backend = HostBackend());
  const char* kind() const override { return "linear"; }
  Shape output_shape() const override { return Shape{out_features_}; }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  bool SetAccumulateGradients(bool on) override {
    accumulate_ = on;
    return true;
  }
  void InitParameters(Rng& rng) override;
  int64_t ForwardFlopsPerSample() const override { return 2 * in_features_ * out_features_; }

 private:
  Linear(std::string name, const Shape& input_shape, int64_t out_features, const Backend& backend);
  const Backend& backend_;
  int64_t in_features_;
  int64_t out_features_;
  Parameter weight_;
  Parameter bias_;
  bool accumulate_ = false;  // Backward adds to the gradients
  Tensor input_;
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_LINEAR_H_
