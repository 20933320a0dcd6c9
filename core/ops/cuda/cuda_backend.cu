#include "core/ops/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/ops/cuda/cuda_status.h"
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

absl::Status CheckSameSize(const Tensor& a, const Tensor& b) {
  if (a.numel() == b.numel()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("tensor sizes differ: ", a.shape().ToString(), " and ", b.shape().ToString()));
}

int Blocks(int64_t n) { return static_cast<int>((n + 255) / 256); }

__global__ void ReluForwardKernel(const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void ReluBackwardKernel(const float* y, const float* dy, float* dx, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void SgdKernel(float* p, const float* g, float* buf, int64_t n, float lr, float mu,
                          float wd, bool nesterov) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float d = g[i] + wd * p[i];
  const float b = mu * buf[i] + d;
  buf[i] = b;
  p[i] -= lr * (nesterov ? d + mu * b : b);
}

__global__ void MultiplyKernel(const float* x, const float* mask, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] * mask[i];
}

__global__ void AddKernel(const float* a, const float* b, float* out, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

__global__ void AxpyKernel(float alpha, const float* x, float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] += alpha * x[i];
}

__global__ void ScaleKernel(float alpha, float* x, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= alpha;
}

__global__ void BroadcastRowsKernel(const float* bias, float* out, int64_t rows, int64_t cols) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < rows * cols) out[i] = bias[i % cols];
}

// One thread per column, summing down the rows in order (the CPU kernel's
// order, so the sums agree to rounding).
__global__ void SumRowsKernel(const float* m, float* sums, int64_t rows, int64_t cols) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  float total = 0.0f;
  for (int64_t r = 0; r < rows; ++r) total += m[r * cols + c];
  sums[c] = total;
}

// OK when every operand is a float CUDA tensor.
absl::Status CheckOperands(const char* op, std::initializer_list<const Tensor*> operands) {
  for (const Tensor* t : operands) {
    if (auto s = CheckCudaFloat(*t, op); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

absl::Status RegisterCudaAllocator() {
  if (CudaDeviceCount() == 0) {
    return absl::FailedPreconditionError("no CUDA device is visible to this process");
  }
  static CudaMallocAllocator* backing = new CudaMallocAllocator();
  static CachingAllocator* cache = new CachingAllocator(backing, size_t{8} << 30);
  SetDeviceAllocator(Device::kCuda, cache);
  return absl::OkStatus();
}

absl::Status CopyToDevice(const Tensor& host, const Tensor& device) {
  if (auto s = CheckCudaFloat(device, "destination"); !s.ok()) return s;
  if (auto s = CheckSameSize(host, device); !s.ok()) return s;
  return STRATA_CUDA_CHECK(
      cudaMemcpy(device.raw_data(), host.raw_data(), host.nbytes(), cudaMemcpyHostToDevice));
}

absl::Status CopyToHost(const Tensor& device, const Tensor& host) {
  if (auto s = CheckCudaFloat(device, "source"); !s.ok()) return s;
  if (auto s = CheckSameSize(host, device); !s.ok()) return s;
  return STRATA_CUDA_CHECK(
      cudaMemcpy(host.raw_data(), device.raw_data(), host.nbytes(), cudaMemcpyDeviceToHost));
}

absl::Status CudaReluForward(const Tensor& x, const Tensor& y) {
  for (const Tensor* t : {&x, &y}) {
    if (auto s = CheckCudaFloat(*t, "relu operand"); !s.ok()) return s;
  }
  if (auto s = CheckSameSize(x, y); !s.ok()) return s;
  if (x.numel() == 0) return absl::OkStatus();
  ReluForwardKernel<<<Blocks(x.numel()), 256>>>(x.data(), y.data(), x.numel());
  return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
}

absl::Status CudaReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  for (const Tensor* t : {&y, &dy, &dx}) {
    if (auto s = CheckCudaFloat(*t, "relu operand"); !s.ok()) return s;
  }
  if (auto s = CheckSameSize(y, dy); !s.ok()) return s;
  if (auto s = CheckSameSize(y, dx); !s.ok()) return s;
  if (y.numel() == 0) return absl::OkStatus();
  ReluBackwardKernel<<<Blocks(y.numel()), 256>>>(y.data(), dy.data(), dx.data(), y.numel());
  return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
}

absl::Status CudaSgdUpdate(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                           float lr, float momentum, float weight_decay, bool nesterov) {
  for (const Tensor* t : {&param, &grad, &momentum_buffer}) {
    if (auto s = CheckCudaFloat(*t, "sgd operand"); !s.ok()) return s;
  }
  if (auto s = CheckSameSize(param, grad); !s.ok()) return s;
  if (auto s = CheckSameSize(param, momentum_buffer); !s.ok()) return s;
  if (param.numel() == 0) return absl::OkStatus();
  SgdKernel<<<Blocks(param.numel()), 256>>>(param.data(), grad.data(), momentum_buffer.data(),
                                            param.numel(), lr, momentum, weight_decay, nesterov);
  return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
}

namespace {

// Every element-wise op of core/ops/backend.h on device tensors.
class CudaBackend final : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::kCuda; }
  absl::StatusOr<Tensor> Upload(const Tensor& host) const override {
    Tensor d = Tensor::Empty(host.shape(), DType::kF32, Device::kCuda);
    if (auto s = CopyToDevice(host, d); !s.ok()) return s;
    return d;
  }
  absl::StatusOr<Tensor> Download(const Tensor& tensor) const override {
    Tensor h = Tensor::Empty(tensor.shape());
    if (auto s = CopyToHost(tensor, h); !s.ok()) return s;
    return h;
  }
  absl::Status Relu(const Tensor& x, const Tensor& y) const override {
    return CudaReluForward(x, y);
  }
  absl::Status ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) const override {
    return CudaReluBackward(y, dy, dx);
  }
  absl::Status Multiply(const Tensor& x, const Tensor& mask, const Tensor& y) const override {
    if (auto s = CheckOperands("multiply operand", {&x, &mask, &y}); !s.ok()) return s;
    if (auto s = CheckSameSize("multiply", x, mask); !s.ok()) return s;
    if (auto s = CheckSameSize("multiply", x, y); !s.ok()) return s;
    if (x.numel() == 0) return absl::OkStatus();
    MultiplyKernel<<<Blocks(x.numel()), 256>>>(x.data(), mask.data(), y.data(), x.numel());
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  absl::Status Add(const Tensor& a, const Tensor& b, const Tensor& out) const override {
    if (auto s = CheckOperands("add operand", {&a, &b, &out}); !s.ok()) return s;
    if (auto s = CheckSameSize("add", a, b); !s.ok()) return s;
    if (auto s = CheckSameSize("add", a, out); !s.ok()) return s;
    if (a.numel() == 0) return absl::OkStatus();
    AddKernel<<<Blocks(a.numel()), 256>>>(a.data(), b.data(), out.data(), a.numel());
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  absl::Status Axpy(float alpha, const Tensor& x, const Tensor& y) const override {
    if (auto s = CheckOperands("axpy operand", {&x, &y}); !s.ok()) return s;
    if (auto s = CheckSameSize("axpy", x, y); !s.ok()) return s;
    if (x.numel() == 0) return absl::OkStatus();
    AxpyKernel<<<Blocks(x.numel()), 256>>>(alpha, x.data(), y.data(), x.numel());
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  absl::Status Scale(float alpha, const Tensor& x) const override {
    if (auto s = CheckOperands("scale operand", {&x}); !s.ok()) return s;
    if (x.numel() == 0) return absl::OkStatus();
    ScaleKernel<<<Blocks(x.numel()), 256>>>(alpha, x.data(), x.numel());
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  absl::Status BroadcastRows(const Tensor& bias, const Tensor& out) const override {
    if (auto s = CheckOperands("broadcast_rows operand", {&bias, &out}); !s.ok()) return s;
    if (auto s = CheckRowShape("broadcast_rows", out, bias); !s.ok()) return s;
    if (out.numel() == 0) return absl::OkStatus();
    BroadcastRowsKernel<<<Blocks(out.numel()), 256>>>(bias.data(), out.data(), out.dim(0),
                                                      out.dim(1));
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
  absl::Status SumRows(const Tensor& m, const Tensor& sums) const override {
    if (auto s = CheckOperands("sum_rows operand", {&m, &sums}); !s.ok()) return s;
    if (auto s = CheckRowShape("sum_rows", m, sums); !s.ok()) return s;
    if (sums.numel() == 0) return absl::OkStatus();
    SumRowsKernel<<<Blocks(sums.numel()), 256>>>(m.data(), sums.data(), m.dim(0), m.dim(1));
    return STRATA_CUDA_CHECK(cudaDeviceSynchronize());
  }
};

}  // namespace

absl::Status RegisterCudaBackend() {
  if (auto s = RegisterCudaAllocator(); !s.ok()) return s;
  absl::Status s = BackendRegistry::Global().Register(std::make_unique<CudaBackend>());
  return absl::IsAlreadyExists(s) ? absl::OkStatus() : s;
}

}  // namespace strata
