// DnnlConvolution: one convolution for one batch size on the host, through
// oneDNN (forward, backward data, backward weights).
//
// Direct convolution reads the NHWC activations as they are. Winograd
// F(4x4, 3x3) does a quarter of the multiplications of a 3x3 stride-1
// convolution, works in oneDNN's channel-blocked layout (the kernel converts
// its input, output and their gradients), and rounds differently (about
// 1e-6 of a tensor's largest value apart from direct). kAuto picks Winograd
// where oneDNN has it on this CPU and WinogradPays, direct elsewhere.
#ifndef STRATA_CORE_OPS_CPU_DNNL_CONVOLUTION_H_
#define STRATA_CORE_OPS_CPU_DNNL_CONVOLUTION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/ops/shared/kernel_shapes.h"
#include "core/tensor/tensor.h"

namespace strata {

// True when Winograd is expected to be faster than direct convolution,
// layout conversions included, for `shape`: a 3x3 kernel at stride 1, an
// output whose height and width are multiples of the 4x4 tile (else the
// tiles' overhang is wasted work), channels in blocks of 16, and enough
// tiles to pay for transforming the weights once per pass: N*H*W/16 >= 64
// with at least 128 input and output channels, >= 256 with at least 64
// (fewer channels: direct).
bool WinogradPays(const ConvolutionShape& shape);

class DnnlConvolution {
 public:
  // Unimplemented when shape.algorithm is kWinograd and this CPU's oneDNN
  // has no Winograd kernel for the shape; kAuto falls back to direct then.
  static absl::StatusOr<std::unique_ptr<DnnlConvolution>> Create(const ConvolutionShape& shape);
  ~DnnlConvolution();

  // kDirect or kWinograd: what runs.
  ConvAlgorithm algorithm() const { return algorithm_; }
  // output = conv(input, weight) + bias; input and output NHWC, weight
  // OIHW, bias {O} (ignored without one). With `training` it keeps the
  // layouts Backward needs.
  void Forward(const Tensor& input, const Tensor& weight, const Tensor& bias, const Tensor& output,
               bool training);
  // grad_weight (and grad_bias) overwritten, and grad_input unless
  // undefined, from the last training Forward of these input and weights.
  void Backward(const Tensor& input, const Tensor& weight, const Tensor& grad_output,
                const Tensor& grad_weight, const Tensor& grad_bias, const Tensor& grad_input);

 private:
  struct Kernels;
  DnnlConvolution(const ConvolutionShape& shape, ConvAlgorithm algorithm,
                  std::unique_ptr<Kernels> kernels);
  ConvolutionShape shape_;
  ConvAlgorithm algorithm_;
  std::unique_ptr<Kernels> kernels_;
  // From the training Forward, in the kernels' layouts (undefined when the
  // layout is the caller's own).
  Tensor input_in_layout_, weight_in_layout_;
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_DNNL_CONVOLUTION_H_
