#include "core/ops/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/ops/cuda/cuda_context.h"
#include "core/ops/cuda/cuda_status.h"
#include "core/ops/cuda/cudnn_layer_kernels.h"
#include "core/ops/cuda/pinned_staging.h"
#include "core/ops/cuda/routing_kernels.h"
#include "core/ops/shared/counter_random.h"
#include "core/ops/shared/loss_row.h"
#include "core/ops/shared/update_rules.h"
#include "core/status.h"
#include "core/tensor/allocator.h"

namespace strata {
namespace {

class CudaMallocAllocator final : public Allocator {
 public:
  void* Allocate(size_t bytes) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) throw std::bad_alloc();
    return p;
  }
  void Deallocate(void* ptr, size_t) override { cudaFree(ptr); }
};

// The CUDA tensors' allocator: cudaMalloc'd blocks, cached by size.
CachingAllocator& DeviceMemory() {
  static CachingAllocator* cache = new CachingAllocator(new CudaMallocAllocator(), size_t{8} << 30);
  return *cache;
}

constexpr int kThreads = 256;
int Blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

__device__ int64_t GlobalIndex() {
  return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
}

__global__ void FillKernel(float value, float* x, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) x[i] = value;
}

__global__ void ReluForwardKernel(const float* x, float* y, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void ReluBackwardKernel(const float* y, const float* dy, float* dx, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void MultiplyKernel(const float* x, const float* mask, float* y, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) y[i] = x[i] * mask[i];
}

__global__ void AddKernel(const float* a, const float* b, float* out, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void AxpyKernel(float alpha, const float* x, float* y, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) y[i] += alpha * x[i];
}

__global__ void ScaleKernel(float alpha, float* x, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) x[i] *= alpha;
}

__global__ void BroadcastRowsKernel(const float* bias, float* out, int64_t rows, int64_t cols) {
  const int64_t i = GlobalIndex();
  if (i < rows * cols) out[i] = bias[i % cols];
}

// One thread per column, summing down the rows in order (the CPU kernel's
// order, so the sums agree to rounding).
__global__ void SumRowsKernel(const float* m, float* sums, int64_t rows, int64_t cols,
                              bool accumulate) {
  const int64_t c = GlobalIndex();
  if (c >= cols) return;
  float total = 0.0f;
  for (int64_t r = 0; r < rows; ++r) total += m[r * cols + c];
  sums[c] = accumulate ? sums[c] + total : total;
}

// One thread per row (core/ops/shared/loss_row.h).
__global__ void SoftmaxCrossEntropyKernel(const float* logits, const int32_t* labels, int64_t n,
                                          int64_t k, float row_scale, float* row_loss,
                                          float* row_correct, float* grad) {
  const int64_t i = GlobalIndex();
  if (i >= n) return;
  SoftmaxCrossEntropyRow(logits + i * k, labels[i], k, row_scale, row_loss + i, row_correct + i,
                         grad == nullptr ? nullptr : grad + i * k);
}

__global__ void DropoutMaskKernel(uint64_t seed, uint64_t stream, float p, float* mask, int64_t n) {
  const int64_t i = GlobalIndex();
  if (i < n) mask[i] = DropoutMaskValue(seed, stream, static_cast<uint64_t>(i), p);
}

// One element of an optimizer update per thread (core/ops/shared/update_rules.h).
__global__ void UpdateKernel(UpdateRule r, UpdateStep s, float* p, const float* g, float* state,
                             int64_t n) {
  const int64_t i = GlobalIndex();
  if (i >= n) return;
  if (r.kind == UpdateKind::kAdam) {
    AdamElement<false>(p[i], g[i], state[i], state[n + i], s, r.weight_decay, r.beta1, r.beta2,
                       r.epsilon);
  } else if (r.kind == UpdateKind::kAdamW) {
    AdamElement<true>(p[i], g[i], state[i], state[n + i], s, r.weight_decay, r.beta1, r.beta2,
                      r.epsilon);
  } else if (r.momentum == 0.0f) {
    SgdElement(p[i], g[i], s.lr, s.grad_scale, r.weight_decay);
  } else {
    MomentumElement(p[i], g[i], state[i], s.lr, s.grad_scale, r.weight_decay, r.momentum,
                    r.nesterov);
  }
}

// Every op of core/ops/backend.h on one stream of its own.
class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(CudaContext context)
      : context_(context), staging_(std::make_unique<PinnedStaging>(context.stream)) {}
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::kCuda; }

  absl::StatusOr<Tensor> Upload(const Tensor& host) const override {
    if (host.device() != Device::kCpu) {
      return absl::InvalidArgumentError(
          absl::StrCat("upload takes a host tensor, got one on ", DeviceName(host.device())));
    }
    Tensor d = Tensor::Empty(host.shape(), host.dtype(), Device::kCuda);
    // Through a pinned buffer: the host tensor may go as soon as this
    // returns, and nothing waits for the copy.
    STRATA_RETURN_IF_ERROR(staging_->Upload(host.raw_data(), d.raw_data(), host.nbytes()));
    return d;
  }

  absl::StatusOr<Tensor> Download(const Tensor& tensor) const override {
    if (tensor.device() != Device::kCuda) {
      return absl::InvalidArgumentError(
          absl::StrCat("download takes a CUDA tensor, got one on ", DeviceName(tensor.device())));
    }
    Tensor h = Tensor::Empty(tensor.shape(), tensor.dtype());
    STRATA_RETURN_IF_ERROR(
        STRATA_CUDA_CHECK(cudaMemcpyAsync(h.raw_data(), tensor.raw_data(), tensor.nbytes(),
                                          cudaMemcpyDeviceToHost, context_.stream)));
    STRATA_RETURN_IF_ERROR(STRATA_CUDA_CHECK(cudaStreamSynchronize(context_.stream)));
    return h;
  }

  std::optional<uint64_t> PeakMemoryBytes() const override {
    return DeviceMemory().stats().peak_in_use_bytes;
  }

  PendingValue<Tensor> DownloadLater(const Tensor& tensor) const override {
    if (tensor.device() != Device::kCuda) return Backend::DownloadLater(tensor);
    absl::StatusOr<std::shared_ptr<PinnedStaging::Download>> copy =
        staging_->StartDownload(tensor.raw_data(), tensor.nbytes());
    if (!copy.ok()) {
      return PendingValue<Tensor>(
          [status = copy.status()]() -> absl::StatusOr<Tensor> { return status; });
    }
    return PendingValue<Tensor>([copy = *std::move(copy), shape = tensor.shape(),
                                 dtype = tensor.dtype()]() -> absl::StatusOr<Tensor> {
      Tensor h = Tensor::Empty(shape, dtype);
      STRATA_RETURN_IF_ERROR(copy->Finish(h.raw_data()));
      return h;
    });
  }

  absl::Status Fill(float value, const Tensor& x) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("fill", Device::kCuda, DType::kF32, {&x}));
    if (x.numel() == 0) return absl::OkStatus();
    FillKernel<<<Blocks(x.numel()), kThreads, 0, context_.stream>>>(value, x.data(), x.numel());
    return Launched("fill");
  }

  absl::Status Copy(const Tensor& src, const Tensor& dst) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("copy", Device::kCuda, DType::kF32, {&src, &dst}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("copy", src, dst));
    return STRATA_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), src.nbytes(),
                                             cudaMemcpyDeviceToDevice, context_.stream));
  }

  absl::Status Relu(const Tensor& x, const Tensor& y) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("relu", Device::kCuda, DType::kF32, {&x, &y}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("relu", x, y));
    if (x.numel() == 0) return absl::OkStatus();
    ReluForwardKernel<<<Blocks(x.numel()), kThreads, 0, context_.stream>>>(x.data(), y.data(),
                                                                           x.numel());
    return Launched("relu");
  }

  absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("relu_backward", Device::kCuda, DType::kF32, {&y, &dy, &dx}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dy));
    STRATA_RETURN_IF_ERROR(CheckSameSize("relu_backward", y, dx));
    if (y.numel() == 0) return absl::OkStatus();
    ReluBackwardKernel<<<Blocks(y.numel()), kThreads, 0, context_.stream>>>(y.data(), dy.data(),
                                                                            dx.data(), y.numel());
    return Launched("relu_backward");
  }

  absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("multiply", Device::kCuda, DType::kF32, {&x, &mask, &y}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, mask));
    STRATA_RETURN_IF_ERROR(CheckSameSize("multiply", x, y));
    if (x.numel() == 0) return absl::OkStatus();
    MultiplyKernel<<<Blocks(x.numel()), kThreads, 0, context_.stream>>>(x.data(), mask.data(),
                                                                        y.data(), x.numel());
    return Launched("multiply");
  }

  absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("add", Device::kCuda, DType::kF32, {&a, &b, &out}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, b));
    STRATA_RETURN_IF_ERROR(CheckSameSize("add", a, out));
    if (a.numel() == 0) return absl::OkStatus();
    AddKernel<<<Blocks(a.numel()), kThreads, 0, context_.stream>>>(a.data(), b.data(), out.data(),
                                                                   a.numel());
    return Launched("add");
  }

  absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("axpy", Device::kCuda, DType::kF32, {&x, &y}));
    STRATA_RETURN_IF_ERROR(CheckSameSize("axpy", x, y));
    if (x.numel() == 0) return absl::OkStatus();
    AxpyKernel<<<Blocks(x.numel()), kThreads, 0, context_.stream>>>(alpha, x.data(), y.data(),
                                                                    x.numel());
    return Launched("axpy");
  }

  absl::Status Scale(float alpha, const Tensor& x) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("scale", Device::kCuda, DType::kF32, {&x}));
    if (x.numel() == 0) return absl::OkStatus();
    ScaleKernel<<<Blocks(x.numel()), kThreads, 0, context_.stream>>>(alpha, x.data(), x.numel());
    return Launched("scale");
  }

  absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("broadcast_rows", Device::kCuda, DType::kF32, {&bias, &out}));
    STRATA_RETURN_IF_ERROR(CheckRowShape("broadcast_rows", out, bias));
    if (out.numel() == 0) return absl::OkStatus();
    BroadcastRowsKernel<<<Blocks(out.numel()), kThreads, 0, context_.stream>>>(
        bias.data(), out.data(), out.dim(0), out.dim(1));
    return Launched("broadcast_rows");
  }

  absl::Status SumRows(const Tensor& m, const Tensor& sums, bool accumulate) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("sum_rows", Device::kCuda, DType::kF32, {&m, &sums}));
    STRATA_RETURN_IF_ERROR(CheckRowShape("sum_rows", m, sums));
    if (sums.numel() == 0) return absl::OkStatus();
    SumRowsKernel<<<Blocks(sums.numel()), kThreads, 0, context_.stream>>>(
        m.data(), sums.data(), m.dim(0), m.dim(1), accumulate);
    return Launched("sum_rows");
  }

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
  // gets B and A swapped, with their row lengths as leading dimensions.
  absl::Status Gemm(bool transpose_a, bool transpose_b, float alpha, const Tensor& a,
                    const Tensor& b, float beta, const Tensor& c) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("gemm", Device::kCuda, DType::kF32, {&a, &b, &c}));
    int64_t m = 0, n = 0, k = 0;
    STRATA_RETURN_IF_ERROR(CheckGemmShapes(transpose_a, transpose_b, a, b, c, &m, &n, &k));
    if (m == 0 || n == 0) return absl::OkStatus();
    if (k == 0) return beta == 0.0f ? Fill(0.0f, c) : Scale(beta, c);
    return STRATA_CUBLAS_CHECK(cublasSgemm(
        context_.blas, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
        transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k), &alpha, b.data(), static_cast<int>(b.dim(1)), a.data(),
        static_cast<int>(a.dim(1)), &beta, c.data(), static_cast<int>(n)));
  }

  absl::Status SoftmaxCrossEntropy(const Tensor& logits, const Tensor& labels, float grad_scale,
                                   const Tensor& row_loss, const Tensor& row_correct,
                                   const Tensor& grad) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("softmax_cross_entropy", Device::kCuda, DType::kF32,
                                         {&logits, &row_loss, &row_correct, &grad}));
    STRATA_RETURN_IF_ERROR(
        CheckOperands("softmax_cross_entropy", Device::kCuda, DType::kI32, {&labels}));
    STRATA_RETURN_IF_ERROR(CheckLossShapes(logits, labels, row_loss, row_correct, grad));
    const int64_t n = logits.dim(0);
    if (n == 0) return absl::OkStatus();
    SoftmaxCrossEntropyKernel<<<Blocks(n), kThreads, 0, context_.stream>>>(
        logits.data(), labels.i32_data(), n, logits.dim(1), grad_scale / static_cast<float>(n),
        row_loss.data(), row_correct.data(), grad.defined() ? grad.data() : nullptr);
    return Launched("softmax_cross_entropy");
  }

  absl::Status DropoutMask(uint64_t seed, uint64_t stream, float p,
                           const Tensor& mask) const override {
    STRATA_RETURN_IF_ERROR(CheckOperands("dropout_mask", Device::kCuda, DType::kF32, {&mask}));
    if (mask.numel() == 0) return absl::OkStatus();
    DropoutMaskKernel<<<Blocks(mask.numel()), kThreads, 0, context_.stream>>>(
        seed, stream, p, mask.data(), mask.numel());
    return Launched("dropout_mask");
  }

  absl::Status ApplyUpdate(const UpdateRule& rule, const Tensor& param, const Tensor& grad,
                           const Tensor& state, float lr, int64_t step,
                           float grad_scale) const override {
    STRATA_RETURN_IF_ERROR(
        CheckOperands("apply_update", Device::kCuda, DType::kF32, {&param, &grad, &state}));
    STRATA_RETURN_IF_ERROR(CheckUpdateShapes(rule, param, grad, state));
    const int64_t n = param.numel();
    if (n == 0) return absl::OkStatus();
    const UpdateStep s = PrepareUpdate(rule, lr, step, grad_scale);
    UpdateKernel<<<Blocks(n), kThreads, 0, context_.stream>>>(
        rule, s, param.data(), grad.data(), state.defined() ? state.data() : nullptr, n);
    return Launched("apply_update");
  }

  absl::Status TopKGate(const Tensor& logits, bool normalize, const Tensor& probs,
                        const Tensor& expert, const Tensor& gate) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("topk_gate", {&logits, &probs, &gate}, {&expert}));
    STRATA_RETURN_IF_ERROR(CheckGateShapes("topk_gate", expert, {&logits, &probs}, {&gate}));
    return LaunchTopKGate(context_.stream, logits.data(), logits.dim(0),
                          static_cast<int>(logits.dim(1)), static_cast<int>(expert.dim(1)),
                          normalize, probs.data(), expert.i32_data(), gate.data());
  }

  absl::Status TopKGateBackward(const Tensor& probs, const Tensor& expert, const Tensor& gate,
                                const Tensor& grad_gate, const Tensor& prob_grad, bool normalize,
                                const Tensor& grad_logits) const override {
    STRATA_RETURN_IF_ERROR(
        CheckRouting("topk_gate_backward", {&probs, &gate, &grad_gate, &prob_grad, &grad_logits},
                     {&expert}));
    STRATA_RETURN_IF_ERROR(
        CheckGateBackwardShapes(probs, expert, gate, grad_gate, prob_grad, grad_logits));
    return LaunchTopKGateBackward(context_.stream, probs.data(), expert.i32_data(), gate.data(),
                                  grad_gate.data(),
                                  prob_grad.defined() ? prob_grad.data() : nullptr, probs.dim(0),
                                  static_cast<int>(probs.dim(1)), static_cast<int>(expert.dim(1)),
                                  normalize, grad_logits.data());
  }

  absl::Status RankChoices(const Tensor& probs, const Tensor& expert, bool prioritize_confident,
                           const Tensor& rank, const Tensor& need) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("rank_choices", {&probs}, {&expert, &rank, &need}));
    STRATA_RETURN_IF_ERROR(CheckGateShapes("rank_choices", expert, {&probs}, {&rank}));
    STRATA_RETURN_IF_ERROR(CheckRowShape("rank_choices", probs, need));
    // Scratch for the tokens' order; the stream's order makes its reuse safe.
    const Tensor order = Empty({prioritize_confident ? probs.dim(0) : 0}, DType::kI32);
    return LaunchRankChoices(context_.stream, probs.data(), expert.i32_data(), probs.dim(0),
                             static_cast<int>(probs.dim(1)), static_cast<int>(expert.dim(1)),
                             prioritize_confident, order.numel() > 0 ? order.i32_data() : nullptr,
                             rank.i32_data(), need.i32_data());
  }

  absl::Status GateLoad(const Tensor& probs, const Tensor& expert,
                        const Tensor& load) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("gate_load", {&probs, &load}, {&expert}));
    STRATA_RETURN_IF_ERROR(CheckGateLoadShapes(probs, expert, load));
    return LaunchGateLoad(context_.stream, probs.data(), expert.i32_data(), probs.dim(0),
                          static_cast<int>(probs.dim(1)), static_cast<int>(expert.dim(1)),
                          load.data());
  }

  absl::Status DispatchTokens(const Tensor& expert, const Tensor& rank, const Tensor& x,
                              const Tensor& slots) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("dispatch_tokens", {&x, &slots}, {&expert, &rank}));
    STRATA_RETURN_IF_ERROR(CheckDispatchShapes("dispatch_tokens", expert, rank, x, slots));
    return LaunchDispatchTokens(context_.stream, RoutedChoicesOf(expert, rank, slots.dim(1)),
                                x.data(), x.dim(1), slots.data());
  }

  absl::Status CombineTokens(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                             const Tensor& rows, const Tensor& y) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("combine_tokens", {&gate, &rows, &y}, {&expert, &rank}));
    STRATA_RETURN_IF_ERROR(CheckDispatchShapes("combine_tokens", expert, rank, y, rows));
    STRATA_RETURN_IF_ERROR(CheckGateShapes("combine_tokens", expert, {}, {&gate}));
    return LaunchCombineTokens(context_.stream, RoutedChoicesOf(expert, rank, rows.dim(1)),
                               gate.defined() ? gate.data() : nullptr, rows.data(), y.dim(1),
                               y.data());
  }

  absl::Status CombineTokensBackward(const Tensor& expert, const Tensor& rank, const Tensor& gate,
                                     const Tensor& grad_y, const Tensor& rows,
                                     const Tensor& grad_rows,
                                     const Tensor& grad_gate) const override {
    STRATA_RETURN_IF_ERROR(CheckRouting("combine_tokens_backward",
                                        {&gate, &grad_y, &rows, &grad_rows, &grad_gate},
                                        {&expert, &rank}));
    STRATA_RETURN_IF_ERROR(
        CheckCombineBackwardShapes(expert, rank, gate, grad_y, rows, grad_rows, grad_gate));
    return LaunchCombineTokensBackward(
        context_.stream, RoutedChoicesOf(expert, rank, rows.dim(1)), gate.data(), grad_y.data(),
        rows.data(), grad_y.dim(1), grad_rows.data(), grad_gate.data());
  }

  absl::StatusOr<std::unique_ptr<ConvolutionKernel>> MakeConvolution(
      const ConvolutionShape& shape) const override {
    return MakeCudnnConvolution(context_, shape);
  }
  absl::StatusOr<std::unique_ptr<PoolingKernel>> MakePooling(
      const PoolingShape& shape) const override {
    return MakeCudnnPooling(context_, shape);
  }
  absl::StatusOr<std::unique_ptr<BatchNormKernel>> MakeBatchNorm(
      const BatchNormShape& shape) const override {
    return MakeCudnnBatchNorm(context_, *this, shape);
  }

 private:
  // A launch's own error (a bad configuration), without waiting for the kernel.
  static absl::Status Launched(const char* op) { return CudaStatus(cudaGetLastError(), op); }
  // InvalidArgument naming `op` unless every defined operand is a CUDA
  // tensor, float32 or, in `int32_operands`, int32.
  static absl::Status CheckRouting(const char* op, std::initializer_list<const Tensor*> operands,
                                   std::initializer_list<const Tensor*> int32_operands) {
    STRATA_RETURN_IF_ERROR(CheckOperands(op, Device::kCuda, DType::kF32, operands));
    return CheckOperands(op, Device::kCuda, DType::kI32, int32_operands);
  }

  const CudaContext context_;
  std::unique_ptr<PinnedStaging> staging_;
};

}  // namespace

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    if (why == nullptr) return 0;
    // The runtime reads a missing driver as an old one.
    const bool no_driver = error == cudaErrorInsufficientDriver &&
                           dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) == nullptr;
    *why = no_driver ? std::string("no NVIDIA driver: libcuda.so.1 is not loadable")
                     : absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorString(error));
    return 0;
  }
  if (count == 0 && why != nullptr) *why = "cudaGetDeviceCount: 0 devices";
  return count;
}

absl::Status RegisterCudaAllocator() {
  if (CudaDeviceCount() == 0) {
    return absl::FailedPreconditionError("no CUDA device is visible to this process");
  }
  SetDeviceAllocator(Device::kCuda, &DeviceMemory());
  return absl::OkStatus();
}

absl::Status RegisterCudaBackend(const CudaBackendOptions& options) {
  static int registered_device = -1;
  if (registered_device >= 0) {
    if (registered_device == options.device) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "this process computes on cuda:", registered_device, ", not cuda:", options.device));
  }
  STRATA_RETURN_IF_ERROR(STRATA_CUDA_CHECK(cudaSetDevice(options.device)));
  STRATA_RETURN_IF_ERROR(RegisterCudaAllocator());
  CudaContext context;
  context.tf32 = options.tf32;
  STRATA_RETURN_IF_ERROR(
      STRATA_CUDA_CHECK(cudaStreamCreateWithFlags(&context.stream, cudaStreamNonBlocking)));
  STRATA_RETURN_IF_ERROR(STRATA_CUBLAS_CHECK(cublasCreate(&context.blas)));
  STRATA_RETURN_IF_ERROR(STRATA_CUBLAS_CHECK(cublasSetStream(context.blas, context.stream)));
  // Full float32 products unless TF32 is asked for.
  STRATA_RETURN_IF_ERROR(STRATA_CUBLAS_CHECK(cublasSetMathMode(
      context.blas, options.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH)));
  STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnCreate(&context.dnn)));
  STRATA_RETURN_IF_ERROR(STRATA_CUDNN_CHECK(cudnnSetStream(context.dnn, context.stream)));
  STRATA_RETURN_IF_ERROR(
      BackendRegistry::Global().Register(std::make_unique<CudaBackend>(context)));
  registered_device = options.device;
  return absl::OkStatus();
}

}  // namespace strata
