#include "moe/cuda/dispatch_cuda.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ops/cuda/cuda_status.h"

namespace strata::moe {
namespace {

constexpr int kThreads = 128;

// `t` must be a float32 CUDA tensor of `rows` x `cols` elements.
absl::Status CheckTensor(const Tensor& t, int64_t rows, int64_t cols, const char* what) {
  if (absl::Status device = CheckCudaFloat(t, what); !device.ok()) return device;
  if (t.numel() != rows * cols) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", t.numel(), " elements, the routing needs ",
                                                   rows, " x ", cols));
  }
  return absl::OkStatus();
}

// The token dimension D of a {T, D} tensor under routing r.
int64_t Dim(const DeviceRouting& r, const Tensor& tokens) {
  return r.tokens() > 0 ? tokens.numel() / r.tokens() : 0;
}

__device__ inline int64_t SlotRow(int32_t e, int32_t s, int64_t capacity) {
  return static_cast<int64_t>(e) * capacity + s;
}

// One block per choice: copy the token into its slot.
__global__ void EncodeKernel(const int32_t* expert, const int32_t* slot, int k, int64_t capacity,
                             const float* x, int64_t dim, float* slots) {
  const int64_t c = blockIdx.x;
  if (slot[c] < 0) return;
  const float* src = x + (c / k) * dim;
  float* dst = slots + SlotRow(expert[c], slot[c], capacity) * dim;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = src[d];
}

// One block per token: sum its kept choices' rows, weighted by the gate or not.
__global__ void GatherKernel(const int32_t* expert, const int32_t* slot, const float* gate, int k,
                             int64_t capacity, const float* rows, int64_t dim, float* out) {
  const int64_t t = blockIdx.x;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) {
      const int64_t c = t * k + i;
      if (slot[c] < 0) continue;
      const float g = gate != nullptr ? gate[c] : 1.0f;
      acc += g * rows[SlotRow(expert[c], slot[c], capacity) * dim + d];
    }
    out[t * dim + d] = acc;
  }
}

// One block per choice: the slot's output gradient and the gate's gradient
// (a block-wide dot product).
__global__ void DecodeBackwardKernel(const int32_t* expert, const int32_t* slot, const float* gate,
                                     int k, int64_t capacity, const float* grad_y,
                                     const float* expert_out, int64_t dim, float* grad_expert_out,
                                     float* grad_gate) {
  __shared__ float partial[kThreads];
  const int64_t c = blockIdx.x;
  if (slot[c] < 0) {
    if (threadIdx.x == 0) grad_gate[c] = 0.0f;
    return;
  }
  const float* dy = grad_y + (c / k) * dim;
  const int64_t row = SlotRow(expert[c], slot[c], capacity) * dim;
  float dot = 0.0f;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    grad_expert_out[row + d] = gate[c] * dy[d];
    dot += dy[d] * expert_out[row + d];
  }
  partial[threadIdx.x] = dot;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) grad_gate[c] = partial[0];
}

absl::Status LaunchStatus() { return STRATA_CUDA_CHECK(cudaGetLastError()); }

}  // namespace

absl::StatusOr<DeviceRouting> DeviceRouting::Upload(const Routing& routing) {
  DeviceRouting r;
  r.tokens_ = routing.tokens;
  r.k_ = routing.k;
  r.experts_ = routing.experts;
  r.capacity_ = routing.capacity;
  const size_t n = routing.expert.size();
  if (routing.slot.size() != n || routing.gate.size() != n ||
      n != static_cast<size_t>(routing.tokens * routing.k)) {
    return absl::InvalidArgumentError("routing arrays disagree with tokens x k");
  }
  if (n == 0) return r;
  absl::Status s = STRATA_CUDA_CHECK(cudaMalloc(&r.expert_, n * sizeof(int32_t)));
  if (s.ok()) s = STRATA_CUDA_CHECK(cudaMalloc(&r.slot_, n * sizeof(int32_t)));
  if (s.ok()) s = STRATA_CUDA_CHECK(cudaMalloc(&r.gate_, n * sizeof(float)));
  if (s.ok()) {
    s = STRATA_CUDA_CHECK(cudaMemcpy(r.expert_, routing.expert.data(), n * sizeof(int32_t),
                                         cudaMemcpyHostToDevice));
  }
  if (s.ok()) {
    s = STRATA_CUDA_CHECK(cudaMemcpy(r.slot_, routing.slot.data(), n * sizeof(int32_t),
                                         cudaMemcpyHostToDevice));
  }
  if (s.ok()) {
    s = STRATA_CUDA_CHECK(
        cudaMemcpy(r.gate_, routing.gate.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  }
  if (!s.ok()) return s;  // r's destructor frees what was allocated
  return r;
}

DeviceRouting::DeviceRouting(DeviceRouting&& other) noexcept { *this = std::move(other); }

DeviceRouting& DeviceRouting::operator=(DeviceRouting&& other) noexcept {
  if (this == &other) return *this;
  Release();
  tokens_ = other.tokens_;
  k_ = other.k_;
  experts_ = other.experts_;
  capacity_ = other.capacity_;
  expert_ = std::exchange(other.expert_, nullptr);
  slot_ = std::exchange(other.slot_, nullptr);
  gate_ = std::exchange(other.gate_, nullptr);
  return *this;
}

DeviceRouting::~DeviceRouting() { Release(); }

void DeviceRouting::Release() {
  cudaFree(expert_);
  cudaFree(slot_);
  cudaFree(gate_);
  expert_ = slot_ = nullptr;
  gate_ = nullptr;
}

absl::Status CudaEncode(const DeviceRouting& r, const Tensor& x, const Tensor& slots) {
  const int64_t dim = Dim(r, x);
  if (absl::Status s = CheckTensor(x, r.tokens(), dim, "x"); !s.ok()) return s;
  if (absl::Status s = CheckTensor(slots, r.experts() * r.capacity(), dim, "slots"); !s.ok()) {
    return s;
  }
  const int64_t choices = r.tokens() * r.k();
  if (choices == 0) return absl::OkStatus();
  EncodeKernel<<<static_cast<unsigned>(choices), kThreads>>>(r.expert(), r.slot(), r.k(),
                                                             r.capacity(), x.data(), dim,
                                                             slots.data());
  return LaunchStatus();
}

absl::Status CudaDecode(const DeviceRouting& r, const Tensor& expert_out, const Tensor& y) {
  const int64_t dim = Dim(r, y);
  if (absl::Status s = CheckTensor(y, r.tokens(), dim, "y"); !s.ok()) return s;
  if (absl::Status s = CheckTensor(expert_out, r.experts() * r.capacity(), dim, "expert_out");
      !s.ok()) {
    return s;
  }
  if (r.tokens() == 0) return absl::OkStatus();
  GatherKernel<<<static_cast<unsigned>(r.tokens()), kThreads>>>(
      r.expert(), r.slot(), r.gate(), r.k(), r.capacity(), expert_out.data(), dim, y.data());
  return LaunchStatus();
}

absl::Status CudaDecodeBackward(const DeviceRouting& r, const Tensor& grad_y,
                                const Tensor& expert_out, const Tensor& grad_expert_out,
                                const Tensor& grad_gate) {
  const int64_t dim = Dim(r, grad_y);
  const int64_t rows = r.experts() * r.capacity();
  if (absl::Status s = CheckTensor(grad_y, r.tokens(), dim, "grad_y"); !s.ok()) return s;
  if (absl::Status s = CheckTensor(expert_out, rows, dim, "expert_out"); !s.ok()) return s;
  if (absl::Status s = CheckTensor(grad_expert_out, rows, dim, "grad_expert_out"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTensor(grad_gate, r.tokens(), r.k(), "grad_gate"); !s.ok()) return s;
  const int64_t choices = r.tokens() * r.k();
  if (choices == 0) return absl::OkStatus();
  DecodeBackwardKernel<<<static_cast<unsigned>(choices), kThreads>>>(
      r.expert(), r.slot(), r.gate(), r.k(), r.capacity(), grad_y.data(), expert_out.data(), dim,
      grad_expert_out.data(), grad_gate.data());
  return LaunchStatus();
}

absl::Status CudaEncodeBackward(const DeviceRouting& r, const Tensor& grad_slots,
                                const Tensor& grad_x) {
  const int64_t dim = Dim(r, grad_x);
  if (absl::Status s = CheckTensor(grad_x, r.tokens(), dim, "grad_x"); !s.ok()) return s;
  if (absl::Status s = CheckTensor(grad_slots, r.experts() * r.capacity(), dim, "grad_slots");
      !s.ok()) {
    return s;
  }
  if (r.tokens() == 0) return absl::OkStatus();
  GatherKernel<<<static_cast<unsigned>(r.tokens()), kThreads>>>(
      r.expert(), r.slot(), nullptr, r.k(), r.capacity(), grad_slots.data(), dim, grad_x.data());
  return LaunchStatus();
}

}  // namespace strata::moe
