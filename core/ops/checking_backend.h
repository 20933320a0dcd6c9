// The checking device: a backend that computes with the CPU's kernels on
// memory the host may not touch, so that a missing host/device copy fails
// a test on a machine without a GPU.
//
// Its tensors (Device::kCheck) live in GuardedAllocator memory
// (core/tensor/guarded_allocator.h), PROT_NONE except while one of this
// backend's ops runs, and then only the pages of that op's operands. Code
// that reads or writes a checking-device tensor through data() anywhere
// else (a layer filling an output on the host, a trainer reading a loss it
// never downloaded) takes a segmentation fault at that line. Upload and
// Download are the only ways in and out, as with a GPU.
//
// Registered under "check" in every process (core/ops/backend.h); any code
// that takes a Backend can be run on it. One op runs at a time.
#ifndef STRATA_CORE_OPS_CHECKING_BACKEND_H_
#define STRATA_CORE_OPS_CHECKING_BACKEND_H_

#include <mutex>
#include <optional>

#include "core/ops/cpu_backend.h"

namespace strata {

class CheckingBackend final : public CpuBackend {
 public:
  // Registers the guarded allocator for Device::kCheck.
  CheckingBackend();
  std::string name() const override { return "check"; }
  Device device() const override { return Device::kCheck; }
  absl::StatusOr<Tensor> Upload(const Tensor& host) const override;
  absl::StatusOr<Tensor> Download(const Tensor& tensor) const override;
  std::optional<uint64_t> PeakMemoryBytes() const override;

 protected:
  absl::StatusOr<OperandAccess> OpenOperands(
      const char* op, std::initializer_list<const Tensor*> operands,
      std::initializer_list<const Tensor*> int32_operands) const override;

 private:
  mutable std::mutex mu_;  // one op at a time: opening is not counted
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CHECKING_BACKEND_H_
