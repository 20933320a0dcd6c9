// The CUDA backend's layer kernels (core/ops/layer_kernels.h) through cuDNN:
// convolution (its forward, backward-data and backward-filter algorithms
// each found once per shape by timing cuDNN's candidates, as
// torch.backends.cudnn.benchmark does), pooling, and BatchNorm (a fused
// ReLU through the backend's own ReLU ops). Activations are NHWC; the
// convolution keeps its weights in cuDNN's fastest NHWC filter layout
// (OHWI) and converts from and to the parameters' OIHW on the device.
#ifndef STRATA_CORE_OPS_CUDA_CUDNN_LAYER_KERNELS_H_
#define STRATA_CORE_OPS_CUDA_CUDNN_LAYER_KERNELS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "core/ops/backend.h"
#include "core/ops/cuda/cuda_context.h"

namespace strata {

// `context` and `backend` (the CUDA backend the kernels belong to) outlive
// the kernels.
absl::StatusOr<std::unique_ptr<ConvolutionKernel>> MakeCudnnConvolution(
    const CudaContext& context, const ConvolutionShape& shape);
absl::StatusOr<std::unique_ptr<PoolingKernel>> MakeCudnnPooling(const CudaContext& context,
                                                                const PoolingShape& shape);
absl::StatusOr<std::unique_ptr<BatchNormKernel>> MakeCudnnBatchNorm(const CudaContext& context,
                                                                    const Backend& backend,
                                                                    const BatchNormShape& shape);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_CUDNN_LAYER_KERNELS_H_
