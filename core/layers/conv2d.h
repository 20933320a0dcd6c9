// Conv2d: 2-D convolution over NHWC images, computed by a backend's
// convolution kernel (core/ops/layer_kernels.h: oneDNN on the host, with
// direct or Winograd convolution as core/ops/cpu/dnnl_convolution.h picks;
// cuDNN on a GPU), one per batch size, made on first use.
//
// Parameters: weight {out_channels, in_channels, kernel, kernel} (OIHW, the
// PyTorch order) and, unless options.bias is false, bias {out_channels}
// (a convolution followed by BatchNorm needs none), on the backend's
// device. Input {H, W, C_in} per sample, output {H_out, W_out, C_out} with
// H_out = (H + 2*padding - kernel)/stride + 1.
#ifndef STRATA_CORE_LAYERS_CONV2D_H_
#define STRATA_CORE_LAYERS_CONV2D_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/layers/kernel_cache.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

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

class Conv2d final : public Layer {
 public:
  // Fails with InvalidArgument when `input_shape` is not {H, W, C} or the
  // options do not fit it (non-positive sizes, kernel larger than the padded
  // image), and with the backend's error when it cannot make the kernel
  // (Unimplemented when options.algorithm is kWinograd but this CPU's
  // oneDNN has no Winograd kernel for the shape).
  static absl::StatusOr<std::unique_ptr<Conv2d>> Create(std::string name, const Shape& input_shape,
                                                        const Conv2dOptions& options,
                                                        const Backend& backend = HostBackend());
  ~Conv2d() override;

  const char* kind() const override { return "conv2d"; }
  Shape output_shape() const override { return output_shape_; }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override;
  void InitParameters(Rng& rng) override;
  int64_t ForwardFlopsPerSample() const override;
  // What computes batches of `batch` images (ConvolutionKernel::algorithm:
  // "direct" or "winograd" on the host).
  std::string AlgorithmFor(int64_t batch);

 private:
  Conv2d(std::string name, const Shape& input_shape, const Conv2dOptions& options,
         const Backend& backend);
  ConvolutionShape ShapeFor(int64_t batch) const;
  absl::StatusOr<ConvolutionKernel*> KernelFor(int64_t batch);

  const Backend& backend_;
  Conv2dOptions options_;
  Shape output_shape_;
  Parameter weight_;
  Parameter bias_;
  KernelCache<ConvolutionKernel> kernels_;
  Tensor input_;  // saved by the training Forward for Backward
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_CONV2D_H_
