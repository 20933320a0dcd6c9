// Conv2d: 2-D convolution over NHWC images, through oneDNN.
//
// Parameters: weight {out_channels, in_channels, kernel, kernel} (OIHW, the
// PyTorch order) and, unless options.bias is false, bias {out_channels}
// (a convolution followed by BatchNorm needs none). Input {H, W, C_in} per sample,
// output {H_out, W_out, C_out} with H_out = (H + 2*padding - kernel)/stride + 1.
//
// Algorithm: direct convolution reads the NHWC activations as they are.
// Winograd F(4x4, 3x3) does a quarter of the multiplications of a 3x3
// stride-1 convolution, works in oneDNN's channel-blocked layout (the layer
// converts its input, output and their gradients), and rounds differently
// (about 1e-6 of a tensor's largest value apart from direct). kAuto picks
// Winograd for a batch size where oneDNN has it on this CPU and
// WinogradPays, direct elsewhere.
#ifndef STRATA_CORE_LAYERS_CONV2D_H_
#define STRATA_CORE_LAYERS_CONV2D_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"

namespace strata {

enum class ConvAlgorithm { kAuto, kDirect, kWinograd };

// "auto", "direct", "winograd".
const char* ConvAlgorithmName(ConvAlgorithm algorithm);
// InvalidArgument naming the accepted values for any other name.
absl::StatusOr<ConvAlgorithm> ParseConvAlgorithm(const std::string& name);

struct Conv2dOptions {
  int64_t out_channels = 0;
  int64_t kernel = 3;
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;
  ConvAlgorithm algorithm = ConvAlgorithm::kAuto;
};

// True when Winograd is expected to be faster than direct convolution,
// layout conversions included, for `batch` images of `input_shape`
// ({H, W, C}): a 3x3 kernel at stride 1, an output whose height and width
// are multiples of the 4x4 tile (else the tiles' overhang is wasted work),
// channels in blocks of 16, and enough tiles to pay for transforming the
// weights once per pass: N*H*W/16 >= 64 with at least 128 input and output
// channels, >= 256 with at least 64 (fewer channels: direct).
bool WinogradPays(int64_t batch, const Shape& input_shape, const Conv2dOptions& options);

class Conv2d final : public Layer {
 public:
  // Fails with InvalidArgument when `input_shape` is not {H, W, C} or the
  // options do not fit it (non-positive sizes, kernel larger than the padded
  // image), and with Unimplemented when options.algorithm is kWinograd but
  // this CPU's oneDNN has no Winograd kernel for the shape.
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
  // kDirect or kWinograd: what runs for batches of `batch` images (should
  // oneDNN lack the Winograd kernel kAuto picks for a batch size, direct
  // runs instead, with a warning).
  ConvAlgorithm AlgorithmFor(int64_t batch) const;

 private:
  struct Kernels;  // oneDNN primitives for one batch size
  Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options,
         bool winograd_available);
  Kernels& KernelsFor(int64_t batch);

  Conv2dOptions options_;
  bool winograd_available_;  // oneDNN has a Winograd kernel for this layer here
  Shape output_shape_;
  Parameter weight_;
  Parameter bias_;
  std::map<int64_t, std::unique_ptr<Kernels>> kernels_;
  Tensor input_;             // saved by Forward for Backward, in the kernel's layout
  Tensor weight_in_layout_;  // weights as the forward kernel wants them
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_CONV2D_H_
