#include "core/ops/cuda/cudnn_layer_kernels.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ops/cuda/cuda_status.h"
#include "core/status.h"

namespace strata {
namespace {

constexpr int kThreads = 256;
int Blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

// One owner per cuDNN descriptor kind: created in the constructor (a
// failure there leaves it null and is reported by ok()), destroyed once.
template <typename T, cudnnStatus_t (*CreateFn)(T*), cudnnStatus_t (*DestroyFn)(T)>
class Descriptor {
 public:
  Descriptor() { created_ = CreateFn(&d_) == CUDNN_STATUS_SUCCESS; }
  ~Descriptor() {
    if (created_) DestroyFn(d_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  absl::Status ok() const {
    return created_ ? absl::OkStatus() : absl::InternalError("a cuDNN descriptor was refused");
  }
  T get() const { return d_; }

 private:
  T d_{};
  bool created_ = false;
};

using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc = Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                            cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
                            cudnnDestroyPoolingDescriptor>;

// An NHWC float tensor of n images of h x w x c.
absl::Status SetNhwc(const TensorDesc& d, int64_t n, int64_t h, int64_t w, int64_t c) {
  STRATA_RETURN_IF_ERROR(d.ok());
  return STRATA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT,
                                                       static_cast<int>(n), static_cast<int>(c),
                                                       static_cast<int>(h), static_cast<int>(w)));
}

// OIHW <-> OHWI: weights between the parameters' order and cuDNN's NHWC
// filters. One thread per element of the destination.
__global__ void OihwToOhwiKernel(const float* oihw, float* ohwi, int64_t o, int64_t i, int64_t hw) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= o * i * hw) return;
  const int64_t c = e % i, p = (e / i) % hw, k = e / (i * hw);
  ohwi[e] = oihw[(k * i + c) * hw + p];
}

__global__ void OhwiToOihwKernel(const float* ohwi, float* oihw, int64_t o, int64_t i, int64_t hw) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= o * i * hw) return;
  const int64_t p = e % hw, c = (e / hw) % i, k = e / (i * hw);
  oihw[e] = ohwi[(k * hw + p) * i + c];
}

cudnnMathType_t MathOf(const CudaContext& context) {
  return context.tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

// The fastest of cuDNN's timed candidates that succeeded and keeps to the
// context's math (no tensor-core TF32 unless allowed).
template <typename Perf>
absl::StatusOr<Perf> Fastest(const Perf* perf, int count, const CudaContext& context,
                             const char* what) {
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (!context.tf32 && perf[i].mathType == CUDNN_TENSOR_OP_MATH) continue;
    return perf[i];
  }
  return absl::UnimplementedError(
      absl::StrCat("cuDNN found no ", what, " algorithm for the shape"));
}

class CudnnConvolution final : public ConvolutionKernel {
 public:
  CudnnConvolution(const CudaContext& context, const ConvolutionShape& shape)
      : context_(context), shape_(shape) {}

  absl::Status Prepare() {
    const ConvolutionShape& s = shape_;
    STRATA_RETURN_IF_ERROR(SetNhwc(x_, s.batch, s.height, s.width, s.in_channels));
    STRATA_RETURN_IF_ERROR(SetNhwc(y_, s.batch, s.out_height(), s.out_width(), s.out_channels));
    STRATA_RETURN_IF_ERROR(SetNhwc(bias_, 1, 1, 1, s.out_channels));
    STRATA_RETURN_IF_ERROR(w_.ok());
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnSetFilter4dDescriptor(
        w_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, static_cast<int>(s.out_channels),
        static_cast<int>(s.in_channels), static_cast<int>(s.kernel), static_cast<int>(s.kernel))));
    STRATA_RETURN_IF_ERROR(conv_.ok());
    const int pad = static_cast<int>(s.padding), stride = static_cast<int>(s.stride);
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        conv_.get(), pad, pad, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)));
    STRATA_RETURN_IF_ERROR(
        STRATA_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_.get(), MathOf(context_))));
    cudnnHandle_t h = context_.dnn;
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(
        h, x_.get(), w_.get(), conv_.get(), y_.get(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, fwd)));
    STRATA_ASSIGN_OR_RETURN(cudnnConvolutionFwdAlgoPerf_t f, Fastest(fwd, n, context_, "forward"));
    cudnnConvolutionBwdDataAlgoPerf_t bwd_data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        h, w_.get(), y_.get(), conv_.get(), x_.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n,
        bwd_data)));
    STRATA_ASSIGN_OR_RETURN(cudnnConvolutionBwdDataAlgoPerf_t d,
                            Fastest(bwd_data, n, context_, "backward-data"));
    cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
        h, x_.get(), y_.get(), conv_.get(), w_.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n,
        bwd_filter)));
    STRATA_ASSIGN_OR_RETURN(cudnnConvolutionBwdFilterAlgoPerf_t g,
                            Fastest(bwd_filter, n, context_, "backward-filter"));
    fwd_algo_ = f.algo;
    bwd_data_algo_ = d.algo;
    bwd_filter_algo_ = g.algo;
    const size_t bytes = std::max({f.memory, d.memory, g.memory, size_t{4}});
    workspace_ = Tensor::Empty({static_cast<int64_t>((bytes + 3) / 4)}, DType::kF32, Device::kCuda);
    const Shape ohwi{s.out_channels, s.kernel, s.kernel, s.in_channels};
    weight_ohwi_ = Tensor::Empty(ohwi, DType::kF32, Device::kCuda);
    grad_weight_ohwi_ = Tensor::Empty(ohwi, DType::kF32, Device::kCuda);
    return absl::OkStatus();
  }

  std::string algorithm() const override {
    return absl::StrCat("cudnn forward ", static_cast<int>(fwd_algo_), ", backward data ",
                        static_cast<int>(bwd_data_algo_), ", backward filter ",
                        static_cast<int>(bwd_filter_algo_));
  }

  absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& output, bool) override {
    STRATA_RETURN_IF_ERROR(CheckOperands("convolution", Device::kCuda, DType::kF32,
                                         {&input, &weight, &bias, &output}));
    STRATA_RETURN_IF_ERROR(ToOhwi(weight));
    const float one = 1.0f, zero = 0.0f;
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnConvolutionForward(
        context_.dnn, &one, x_.get(), input.data(), w_.get(), weight_ohwi_.data(), conv_.get(),
        fwd_algo_, workspace_.raw_data(), workspace_.nbytes(), &zero, y_.get(), output.data())));
    if (!shape_.bias) return absl::OkStatus();
    return STRATA_CUDNN_CHECK(cudnnAddTensor(context_.dnn, &one, bias_.get(), bias.data(), &one,
                                             y_.get(), output.data()));
  }

  absl::Status Backward(const Tensor& input, const Tensor& weight, const Tensor& grad_output,
                        const Tensor& grad_weight, const Tensor& grad_bias,
                        const Tensor& grad_input) override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("convolution_backward", Device::kCuda, DType::kF32,
                      {&input, &weight, &grad_output, &grad_weight, &grad_bias, &grad_input}));
    const float one = 1.0f, zero = 0.0f;
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        context_.dnn, &one, x_.get(), input.data(), y_.get(), grad_output.data(), conv_.get(),
        bwd_filter_algo_, workspace_.raw_data(), workspace_.nbytes(), &zero, w_.get(),
        grad_weight_ohwi_.data())));
    STRATA_RETURN_IF_ERROR(ToOihw(grad_weight));
    if (shape_.bias) {
      STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnConvolutionBackwardBias(
          context_.dnn, &one, y_.get(), grad_output.data(), &zero, bias_.get(), grad_bias.data())));
    }
    if (!grad_input.defined()) return absl::OkStatus();
    // weight_ohwi_ still holds the Forward's weights (they change only
    // after Backward).
    return STRATA_CUDNN_CHECK(cudnnConvolutionBackwardData(
        context_.dnn, &one, w_.get(), weight_ohwi_.data(), y_.get(), grad_output.data(),
        conv_.get(), bwd_data_algo_, workspace_.raw_data(), workspace_.nbytes(), &zero, x_.get(),
        grad_input.data()));
  }

 private:
  int64_t WeightCount() const {
    return shape_.out_channels * shape_.in_channels * shape_.kernel * shape_.kernel;
  }
  absl::Status ToOhwi(const Tensor& oihw) {
    const int64_t n = WeightCount();
    OihwToOhwiKernel<<<Blocks(n), kThreads, 0, context_.stream>>>(
        oihw.data(), weight_ohwi_.data(), shape_.out_channels, shape_.in_channels,
        shape_.kernel * shape_.kernel);
    return CudaStatus(cudaGetLastError(), "convolution weight layout");
  }
  absl::Status ToOihw(const Tensor& oihw) {
    const int64_t n = WeightCount();
    OhwiToOihwKernel<<<Blocks(n), kThreads, 0, context_.stream>>>(
        grad_weight_ohwi_.data(), oihw.data(), shape_.out_channels, shape_.in_channels,
        shape_.kernel * shape_.kernel);
    return CudaStatus(cudaGetLastError(), "convolution gradient layout");
  }

  const CudaContext& context_;
  ConvolutionShape shape_;
  TensorDesc x_, y_, bias_;
  FilterDesc w_;
  ConvDesc conv_;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
  Tensor workspace_, weight_ohwi_, grad_weight_ohwi_;
};

class CudnnPooling final : public PoolingKernel {
 public:
  CudnnPooling(const CudaContext& context, const PoolingShape& shape)
      : context_(context), shape_(shape) {}

  absl::Status Prepare() {
    const PoolingShape& s = shape_;
    STRATA_RETURN_IF_ERROR(SetNhwc(x_, s.batch, s.height, s.width, s.channels));
    STRATA_RETURN_IF_ERROR(SetNhwc(y_, s.batch, s.out_height(), s.out_width(), s.channels));
    STRATA_RETURN_IF_ERROR(pool_.ok());
    const int k = static_cast<int>(s.kernel), pad = static_cast<int>(s.padding),
              stride = static_cast<int>(s.stride);
    return STRATA_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        pool_.get(),
        s.kind == PoolKind::kMax ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
        CUDNN_NOT_PROPAGATE_NAN, k, k, pad, pad, stride, stride));
  }

  absl::Status Forward(const Tensor& input, const Tensor& output, bool training) override {
    STRATA_RETURN_IF_ERROR(CheckOperands("pooling", Device::kCuda, DType::kF32, {&input, &output}));
    const float one = 1.0f, zero = 0.0f;
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnPoolingForward(
        context_.dnn, pool_.get(), &one, x_.get(), input.data(), &zero, y_.get(), output.data())));
    if (training) {
      input_ = input;
      output_ = output;
    }
    return absl::OkStatus();
  }

  absl::Status Backward(const Tensor& grad_output, const Tensor& grad_input) override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("pooling_backward", Device::kCuda, DType::kF32, {&grad_output, &grad_input}));
    if (!input_.defined()) {
      return absl::FailedPreconditionError("pooling backward without a training forward");
    }
    const float one = 1.0f, zero = 0.0f;
    const absl::Status done = STRATA_CUDNN_CHECK(cudnnPoolingBackward(
        context_.dnn, pool_.get(), &one, y_.get(), output_.data(), y_.get(), grad_output.data(),
        x_.get(), input_.data(), &zero, x_.get(), grad_input.data()));
    input_ = output_ = Tensor();
    return done;
  }

 private:
  const CudaContext& context_;
  PoolingShape shape_;
  TensorDesc x_, y_;
  PoolDesc pool_;
  Tensor input_, output_;  // of the training Forward
};

class CudnnBatchNorm final : public BatchNormKernel {
 public:
  CudnnBatchNorm(const CudaContext& context, const Backend& backend, const BatchNormShape& shape)
      : context_(context), backend_(backend), shape_(shape) {}

  absl::Status Prepare() {
    const BatchNormShape& s = shape_;
    STRATA_RETURN_IF_ERROR(SetNhwc(x_, s.batch, s.height, s.width, s.channels));
    STRATA_RETURN_IF_ERROR(stats_.ok());
    STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(
        cudnnDeriveBNTensorDescriptor(stats_.get(), x_.get(), CUDNN_BATCHNORM_SPATIAL)));
    saved_mean_ = Tensor::Empty({s.channels}, DType::kF32, Device::kCuda);
    saved_inv_std_ = Tensor::Empty({s.channels}, DType::kF32, Device::kCuda);
    return absl::OkStatus();
  }

  absl::Status Forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                       const Tensor& running_mean, const Tensor& running_var, const Tensor& output,
                       bool training) override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("batchnorm", Device::kCuda, DType::kF32,
                      {&input, &weight, &bias, &running_mean, &running_var, &output}));
    const float one = 1.0f, zero = 0.0f;
    if (training) {
      // cuDNN keeps the running variance unbiased, as PyTorch does.
      STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
          context_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_.get(), input.data(), x_.get(),
          output.data(), stats_.get(), weight.data(), bias.data(), shape_.momentum,
          running_mean.data(), running_var.data(), shape_.epsilon, saved_mean_.data(),
          saved_inv_std_.data())));
    } else {
      STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
          context_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_.get(), input.data(), x_.get(),
          output.data(), stats_.get(), weight.data(), bias.data(), running_mean.data(),
          running_var.data(), shape_.epsilon)));
    }
    return shape_.fused_relu ? backend_.Relu(output, output) : absl::OkStatus();
  }

  absl::Status Backward(const Tensor& input, const Tensor& output, const Tensor& weight,
                        const Tensor& bias, const Tensor& grad_output, const Tensor& grad_weight,
                        const Tensor& grad_bias, const Tensor& grad_input) override {
    STRATA_RETURN_IF_ERROR(CheckOperands(
        "batchnorm_backward", Device::kCuda, DType::kF32,
        {&input, &output, &weight, &bias, &grad_output, &grad_weight, &grad_bias, &grad_input}));
    if (shape_.fused_relu && !output.defined()) {
      return absl::InvalidArgumentError("batchnorm_backward with a fused ReLU needs the output");
    }
    Tensor dy = grad_output;
    if (shape_.fused_relu) {
      // The gradient of the rectified output, masked where it was cut.
      dy = backend_.Empty(grad_output.shape());
      STRATA_RETURN_IF_ERROR(backend_.ReluBackward(output, grad_output, dy));
    }
    const float one = 1.0f, zero = 0.0f;
    return STRATA_CUDNN_CHECK(cudnnBatchNormalizationBackward(
        context_.dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x_.get(), input.data(),
        x_.get(), dy.data(), x_.get(), grad_input.data(), stats_.get(), weight.data(),
        grad_weight.data(), grad_bias.data(), shape_.epsilon, saved_mean_.data(),
        saved_inv_std_.data()));
  }

 private:
  const CudaContext& context_;
  const Backend& backend_;
  BatchNormShape shape_;
  TensorDesc x_, stats_;
  Tensor saved_mean_, saved_inv_std_;  // from the training Forward
};

}  // namespace

absl::StatusOr<std::unique_ptr<ConvolutionKernel>> MakeCudnnConvolution(
    const CudaContext& context, const ConvolutionShape& shape) {
  auto kernel = std::make_unique<CudnnConvolution>(context, shape);
  STRATA_RETURN_IF_ERROR(kernel->Prepare());
  return std::unique_ptr<ConvolutionKernel>(std::move(kernel));
}

absl::StatusOr<std::unique_ptr<PoolingKernel>> MakeCudnnPooling(const CudaContext& context,
                                                                const PoolingShape& shape) {
  auto kernel = std::make_unique<CudnnPooling>(context, shape);
  STRATA_RETURN_IF_ERROR(kernel->Prepare());
  return std::unique_ptr<PoolingKernel>(std::move(kernel));
}

absl::StatusOr<std::unique_ptr<BatchNormKernel>> MakeCudnnBatchNorm(const CudaContext& context,
                                                                    const Backend& backend,
                                                                    const BatchNormShape& shape) {
  auto kernel = std::make_unique<CudnnBatchNorm>(context, backend, shape);
  STRATA_RETURN_IF_ERROR(kernel->Prepare());
  return std::unique_ptr<BatchNormKernel>(std::move(kernel));
}

}  // namespace strata
