// The shapes of the layer kernels a backend makes (core/ops/layer_kernels.h):
// everything a convolution, a pooling or a BatchNorm computes over, for one
// batch size. Activations are NHWC; a convolution's weights OIHW.
#ifndef STRATA_CORE_OPS_SHARED_KERNEL_SHAPES_H_
#define STRATA_CORE_OPS_SHARED_KERNEL_SHAPES_H_

#include <cstdint>

namespace strata {

// How a convolution is computed on the host (oneDNN): direct, Winograd, or
// whichever pays for the shape. A GPU chooses its own algorithm per shape
// and ignores this.
enum class ConvAlgorithm { kAuto, kDirect, kWinograd };

struct ConvolutionShape {
  int64_t batch = 0;
  int64_t height = 0, width = 0, in_channels = 0;  // input {batch, height, width, in_channels}
  int64_t out_channels = 0;
  int64_t kernel = 0, stride = 1, padding = 0;
  bool bias = true;
  ConvAlgorithm algorithm = ConvAlgorithm::kAuto;

  int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

enum class PoolKind { kMax, kAverage };

struct PoolingShape {
  int64_t batch = 0;
  int64_t height = 0, width = 0, channels = 0;
  PoolKind kind = PoolKind::kMax;
  // A window of kernel x kernel at `stride`, zero `padding` (excluded from
  // averages); a global pooling's window is the whole image.
  int64_t kernel = 2, stride = 2, padding = 0;

  int64_t out_height() const { return (height + 2 * padding - kernel) / stride + 1; }
  int64_t out_width() const { return (width + 2 * padding - kernel) / stride + 1; }
};

struct BatchNormShape {
  int64_t batch = 0;
  int64_t height = 0, width = 0, channels = 0;
  float epsilon = 1e-5f;
  float momentum = 0.1f;    // running = (1 - momentum) * running + momentum * batch
  bool fused_relu = false;  // output max(y, 0), and mask the gradient alike
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_KERNEL_SHAPES_H_
