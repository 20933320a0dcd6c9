// The kernels of the layers whose work depends on a shape known ahead
// (convolution, pooling, BatchNorm): a backend makes one per layer and
// batch size (Backend::MakeConvolution and its siblings), preparing once
// what every call reuses (oneDNN primitives and layouts, cuDNN descriptors
// and the algorithm it found fastest), and the layer calls it each step.
//
// Every tensor lives on the backend's device; activations are NHWC, a
// convolution's weights OIHW. A Backward follows the training Forward of
// the same tensors; the convolution and BatchNorm are given them again. A kernel keeps what it
// computed in between (oneDNN's converted layouts and workspaces, the
// batch statistics), so one kernel serves one layer. Errors are
// InvalidArgument for an operand on another device, or the device's own.
#ifndef STRATA_CORE_OPS_LAYER_KERNELS_H_
#define STRATA_CORE_OPS_LAYER_KERNELS_H_

#include <string>

#include "absl/status/status.h"
#include "core/ops/shared/kernel_shapes.h"
#include "core/tensor/tensor.h"

namespace strata {

class ConvolutionKernel {
 public:
  virtual ~ConvolutionKernel() = default;
  // What computes it ("direct", "winograd", or the GPU library's algorithm).
  virtual std::string algorithm() const = 0;
  // output = conv(input, weight) + bias (bias undefined when the shape has none).
  virtual absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& output, bool training) = 0;
  // grad_weight and grad_bias overwritten, grad_input unless undefined.
  virtual absl::Status Backward(const Tensor& input, const Tensor& weight,
                                const Tensor& grad_output, const Tensor& grad_weight,
                                const Tensor& grad_bias, const Tensor& grad_input) = 0;
};

class PoolingKernel {
 public:
  virtual ~PoolingKernel() = default;
  // With `training` the kernel keeps what its Backward needs (oneDNN: the
  // argmax record; cuDNN: the input and output themselves).
  virtual absl::Status Forward(const Tensor& input, const Tensor& output, bool training) = 0;
  virtual absl::Status Backward(const Tensor& grad_output, const Tensor& grad_input) = 0;
};

// weight (gamma), bias (beta), running_mean and running_var are {C}.
class BatchNormKernel {
 public:
  virtual ~BatchNormKernel() = default;
  // With `training`, normalises with the batch's statistics, moves the
  // running ones and keeps what Backward needs; else normalises with the
  // running statistics.
  virtual absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var,
                               const Tensor& output, bool training) = 0;
  // The gradients of weight and bias (overwritten) and of the input.
  // `output` is the training Forward's when the shape fuses a ReLU (which
  // masks with it), else undefined.
  virtual absl::Status Backward(const Tensor& input, const Tensor& output, const Tensor& weight,
                                const Tensor& bias, const Tensor& grad_output,
                                const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_input) = 0;
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_LAYER_KERNELS_H_
