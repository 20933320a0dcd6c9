// Pool2d: max or average pooling over NHWC images, and global average
// pooling, computed by a backend's pooling kernel (core/ops/layer_kernels.h:
// oneDNN on the host, cuDNN on a GPU), one per batch size.
//
// Average pooling excludes padding from the divisor. Global average pooling
// averages each channel over the whole image and outputs a vector {C} per
// sample.
#ifndef STRATA_CORE_LAYERS_POOL2D_H_
#define STRATA_CORE_LAYERS_POOL2D_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/layers/kernel_cache.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

struct Pool2dOptions {
  PoolKind kind = PoolKind::kMax;
  int64_t kernel = 2;
  int64_t stride = 0;  // 0 means "equal to kernel"
  int64_t padding = 0;
  bool global = false;  // average over the whole image; kernel/stride ignored
};

class Pool2d final : public Layer {
 public:
  // Fails unless the input is {H, W, C} and the window fits it.
  static absl::StatusOr<std::unique_ptr<Pool2d>> Create(std::string name, const Shape& input_shape,
                                                        Pool2dOptions options,
                                                        const Backend& backend = HostBackend());
  ~Pool2d() override;
  const char* kind() const override;
  Shape output_shape() const override { return output_shape_; }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;

 private:
  Pool2d(std::string name, const Shape& input_shape, const Pool2dOptions& options,
         const Backend& backend);
  PoolingShape ShapeFor(int64_t batch) const;
  PoolingKernel& KernelFor(int64_t batch);

  const Backend& backend_;
  Pool2dOptions options_;
  Shape output_shape_;    // per-sample output as reported ({C} when global)
  Shape spatial_output_;  // {H_out, W_out, C}
  KernelCache<PoolingKernel> kernels_;
  int64_t trained_batch_ = -1;  // batch of the last training Forward
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_POOL2D_H_
