#include "core/ops/cuda/cuda_backend.h"

#include <cuda_runtime.h>

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

// The ops this backend has; the others are Unimplemented (core/ops/backend.h).
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
};

}  // namespace

absl::Status RegisterCudaBackend() {
  if (auto s = RegisterCudaAllocator(); !s.ok()) return s;
  absl::Status s = BackendRegistry::Global().Register(std::make_unique<CudaBackend>());
  return absl::IsAlreadyExists(s) ? absl::OkStatus() : s;
}

}  // namespace strata
