// Tensor: a shaped, typed view of 64-byte-aligned device memory.
//
// A Tensor is a cheap handle: copies share the same buffer (like a
// std::shared_ptr). `View` and `Slice` make handles onto part of a buffer;
// `Clone` makes a deep copy. Memory comes from the device's allocator (for the
// CPU, the process-wide caching allocator), so freeing and re-creating the
// same shapes every step costs no system calls.
//
// Layout convention: image activations are NHWC — shape {N, H, W, C}, C
// fastest. oneDNN's fastest plain-layout kernels use it, and Flatten of an
// NHWC tensor is a free reshape.
//
//   Tensor x = Tensor::Zeros({64, 28, 28, 1});
//   float* p = x.data();
//   Tensor first8 = x.Slice(0, 8);          // view of images 0..7
//   Tensor flat = x.View({64, 784});        // same bytes, new shape
//
// Thread safety: a Tensor handle is not synchronised; concurrent reads of
// one buffer are fine, concurrent writes need the caller's synchronisation.
#ifndef STRATA_CORE_TENSOR_TENSOR_H_
#define STRATA_CORE_TENSOR_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/allocator.h"

namespace strata {

enum class DType : uint8_t { kF32 = 0, kBF16 = 1, kI32 = 2 };
// kCheck: the checking device (core/ops/checking_backend.h), host memory that
// only its backend's ops may touch.
enum class Device : uint8_t { kCpu = 0, kCuda = 1, kCheck = 2 };
inline constexpr int kDeviceCount = 3;

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);
const char* DeviceName(Device device);

// The dimensions of a tensor, outermost first.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  // Product of the dimensions (1 for rank 0).
  int64_t numel() const;
  // Product of all dimensions but the first (the per-sample size).
  int64_t inner() const;
  // "[64, 28, 28, 1]"
  std::string ToString() const;

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

 private:
  std::vector<int64_t> dims_;
};

// Registers the allocator used for tensors on `device` (the CUDA backend does
// this for Device::kCuda). The CPU allocator is always registered.
void SetDeviceAllocator(Device device, Allocator* allocator);
// The allocator for `device`, or nullptr if none is registered.
Allocator* DeviceAllocator(Device device);

class Tensor {
 public:
  // An undefined tensor (no buffer); defined() is false.
  Tensor() = default;

  // Uninitialised memory. Aborts if `device` has no registered allocator.
  static Tensor Empty(const Shape& shape, DType dtype = DType::kF32, Device device = Device::kCpu);
  // Filled with zeros (CPU only).
  static Tensor Zeros(const Shape& shape);
  // Filled with `value` (CPU only).
  static Tensor Full(const Shape& shape, float value);
  // A CPU copy of `values`, which must hold shape.numel() elements.
  static Tensor FromVector(const Shape& shape, const std::vector<float>& values);

  bool defined() const { return buffer_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i]; }
  int rank() const { return shape_.rank(); }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  // Typed access to the first element (float32 tensors only; int32 ones
  // through i32_data()).
  float* data() const;
  int32_t* i32_data() const;
  void* raw_data() const;

  // A handle with a new shape over the same bytes; numel must be equal.
  Tensor View(const Shape& shape) const;
  // Rows [begin, end) along dimension 0, sharing the buffer.
  Tensor Slice(int64_t begin, int64_t end) const;
  // A deep copy (CPU only).
  Tensor Clone() const;
  // Copies `src` (same numel, CPU) into this tensor's memory.
  void CopyFrom(const Tensor& src) const;
  void Fill(float value) const;
  std::vector<float> ToVector() const;

  // Handles sharing this tensor's buffer (views included); 0 when undefined.
  long use_count() const { return buffer_.use_count(); }
  // True when both handles refer to the same bytes.
  bool SharesBufferWith(const Tensor& other) const { return buffer_ == other.buffer_; }

 private:
  struct Buffer;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::kF32;
  Device device_ = Device::kCpu;
};

// Largest absolute element-wise difference of two equally-sized tensors.
float MaxAbsDiff(const Tensor& a, const Tensor& b);

}  // namespace strata

#endif  // STRATA_CORE_TENSOR_TENSOR_H_
