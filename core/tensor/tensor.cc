#include "core/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kI32:
      return 4;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kI32:
      return "i32";
  }
  return "?";
}

const char* DeviceName(Device device) {
  switch (device) {
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
    case Device::kCheck:
      return "check";
  }
  return "?";
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

int64_t Shape::inner() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims_.size(); ++i) n *= dims_[i];
  return n;
}

std::string Shape::ToString() const { return "[" + absl::StrJoin(dims_, ", ") + "]"; }

namespace {
Allocator* g_allocators[kDeviceCount] = {};
}  // namespace

void SetDeviceAllocator(Device device, Allocator* allocator) {
  g_allocators[static_cast<int>(device)] = allocator;
}

Allocator* DeviceAllocator(Device device) {
  if (device == Device::kCpu) return &CpuAllocator();
  return g_allocators[static_cast<int>(device)];
}

struct Tensor::Buffer {
  Buffer(Allocator* a, size_t n) : allocator(a), bytes(n), ptr(a->Allocate(n)) {}
  ~Buffer() { allocator->Deallocate(ptr, bytes); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Allocator* allocator;
  size_t bytes;
  void* ptr;
};

Tensor Tensor::Empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape.dims()) STRATA_CHECK(d >= 0, "negative dimension in ", shape.ToString());
  Allocator* allocator = DeviceAllocator(device);
  STRATA_CHECK(allocator != nullptr, "no allocator registered for device ", DeviceName(device));
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.device_ = device;
  t.buffer_ = std::make_shared<Buffer>(allocator, std::max<size_t>(t.nbytes(), 1));
  return t;
}

Tensor Tensor::Zeros(const Shape& shape) { return Full(shape, 0.0f); }

Tensor Tensor::Full(const Shape& shape, float value) {
  Tensor t = Empty(shape);
  t.Fill(value);
  return t;
}

Tensor Tensor::FromVector(const Shape& shape, const std::vector<float>& values) {
  STRATA_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "FromVector: ", values.size(),
               " values for shape ", shape.ToString());
  Tensor t = Empty(shape);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(float));
  return t;
}

float* Tensor::data() const {
  STRATA_CHECK(dtype_ == DType::kF32, "data() on a ", DTypeName(dtype_), " tensor");
  return static_cast<float*>(raw_data());
}

int32_t* Tensor::i32_data() const {
  STRATA_CHECK(dtype_ == DType::kI32, "i32_data() on a ", DTypeName(dtype_), " tensor");
  return static_cast<int32_t*>(raw_data());
}

void* Tensor::raw_data() const {
  STRATA_CHECK(buffer_ != nullptr, "access to an undefined tensor");
  return static_cast<char*>(buffer_->ptr) + offset_bytes_;
}

Tensor Tensor::View(const Shape& shape) const {
  STRATA_CHECK(shape.numel() == numel(), "View ", shape.ToString(), " of tensor ",
               shape_.ToString());
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  STRATA_CHECK(rank() >= 1 && begin >= 0 && begin <= end && end <= shape_[0], "Slice [", begin,
               ", ", end, ") of ", shape_.ToString());
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.offset_bytes_ += static_cast<size_t>(begin * shape_.inner()) * DTypeSize(dtype_);
  return t;
}

Tensor Tensor::Clone() const {
  STRATA_CHECK(device_ == Device::kCpu, "Clone of a ", DeviceName(device_), " tensor");
  Tensor t = Empty(shape_, dtype_, device_);
  std::memcpy(t.raw_data(), raw_data(), nbytes());
  return t;
}

void Tensor::CopyFrom(const Tensor& src) const {
  STRATA_CHECK(src.nbytes() == nbytes() && device_ == Device::kCpu && src.device() == Device::kCpu,
               "CopyFrom ", src.shape().ToString(), " into ", shape_.ToString());
  std::memmove(raw_data(), src.raw_data(), nbytes());
}

void Tensor::Fill(float value) const {
  float* p = data();
  std::fill(p, p + numel(), value);
}

std::vector<float> Tensor::ToVector() const {
  const float* p = data();
  return std::vector<float>(p, p + numel());
}

float MaxAbsDiff(const Tensor& a, const Tensor& b) {
  STRATA_CHECK(a.numel() == b.numel(), "MaxAbsDiff of ", a.shape().ToString(), " and ",
               b.shape().ToString());
  const float* pa = a.data();
  const float* pb = b.data();
  float worst = 0.0f;
  for (int64_t i = 0; i < a.numel(); ++i) {
    float d = std::fabs(pa[i] - pb[i]);
    if (!(d <= worst)) worst = d;  // also propagates NaN
  }
  return worst;
}

}  // namespace strata
