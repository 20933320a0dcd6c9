#include "core/ops/checking_backend.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/tensor/guarded_allocator.h"

namespace strata {
namespace {

struct ByteRange {
  const void* begin;
  size_t bytes;
};

void OpenRanges(const std::vector<ByteRange>& ranges) {
  for (const ByteRange& r : ranges) GuardedAllocator::OpenPages(r.begin, r.bytes);
}

void CloseRanges(const std::vector<ByteRange>& ranges) {
  for (const ByteRange& r : ranges) GuardedAllocator::ClosePages(r.begin, r.bytes);
}

}  // namespace

CheckingBackend::CheckingBackend() {
  SetDeviceAllocator(Device::kCheck, &GuardedAllocator::Instance());
}

absl::StatusOr<Tensor> CheckingBackend::Upload(const Tensor& host) const {
  if (host.device() != Device::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("upload takes a host tensor, got one on ", DeviceName(host.device())));
  }
  Tensor t = Tensor::Empty(host.shape(), host.dtype(), Device::kCheck);
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<ByteRange> range = {{t.raw_data(), t.nbytes()}};
  OpenRanges(range);
  std::memcpy(t.raw_data(), host.raw_data(), host.nbytes());
  CloseRanges(range);
  return t;
}

absl::StatusOr<Tensor> CheckingBackend::Download(const Tensor& tensor) const {
  if (tensor.device() != Device::kCheck) {
    return absl::InvalidArgumentError(absl::StrCat(
        "download takes a tensor of the check device, got one on ", DeviceName(tensor.device())));
  }
  Tensor host = Tensor::Empty(tensor.shape(), tensor.dtype());
  std::lock_guard<std::mutex> lock(mu_);
  const std::vector<ByteRange> range = {{tensor.raw_data(), tensor.nbytes()}};
  OpenRanges(range);
  std::memcpy(host.raw_data(), tensor.raw_data(), tensor.nbytes());
  CloseRanges(range);
  return host;
}

absl::StatusOr<CpuBackend::OperandAccess> CheckingBackend::OpenOperands(
    const char* op, std::initializer_list<const Tensor*> operands,
    std::initializer_list<const Tensor*> int32_operands) const {
  STRATA_RETURN_IF_ERROR(CheckDevice(op, operands, int32_operands));
  std::vector<ByteRange> ranges;
  for (auto list : {operands, int32_operands}) {
    for (const Tensor* t : list) {
      if (t->defined()) ranges.push_back({t->raw_data(), t->nbytes()});
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  OpenRanges(ranges);
  return OperandAccess([ranges = std::move(ranges), lock = std::move(lock)]() mutable {
    CloseRanges(ranges);
    lock.unlock();
  });
}

std::optional<uint64_t> CheckingBackend::PeakMemoryBytes() const {
  return GuardedAllocator::Instance().usage().peak();
}

}  // namespace strata
