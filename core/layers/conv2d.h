// Conv2d: 2-D convolution over NHWC images, through oneDNN.
//
// Parameters: weight {out_channels, in_channels, kernel, kernel} (OIHW, the
// PyTorch order) and, unless options.bias is false, bias {out_channels}
// (a convolution followed by BatchNorm needs none). Input {H, W, C_in} per sample,
// output {H_out, W_out, C_out} with H_out = (H + 2*padding - kernel)/stride + 1.
#ifndef STRATA_CORE_LAYERS_CONV2D_H_
#define STRATA_CORE_LAYERS_CONV2D_H_

#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"

namespace strata {

struct Conv2dOptions {
  int64_t out_channels = 0;
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;
};

class Conv2d final : public Layer {
 public:
  // Fails with InvalidArgument when `input_shape` is not {H, W, C} or the
  // options do not fit it (non-positive sizes, kernel larger than the padded image).
  static absl::StatusOr<std::unique_ptr<Conv2d>> Create(std::string name, const Shape& input_shape,
                                                        const Conv2dOptions& options);
  ~Conv2d() override;

  const char* kind() const override { return "conv2d"; }
  Shape output_shape() const override { return output_shape_; }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override;
  void InitParameters(Rng& rng) override;
  int64_t ForwardFlopsPerSample() const override;

 private:
  struct Kernels;  // oneDNN primitives for one batch size
  Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options);
  Kernels& KernelsFor(int64_t batch);

  Conv2dOptions options_;
  Shape output_shape_;
  Parameter weight_;
  Parameter bias_;
  std::map<int64_t, std::unique_ptr<Kernels>> kernels_;
  Tensor input_;             // saved by Forward for Backward
  Tensor weight_in_layout_;  // weights as the forward kernel wants them
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_CONV2D_H_
