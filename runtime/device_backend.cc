#include "runtime/device_backend.h"

#include "absl/strings/str_cat.h"
#include "core/status.h"
#ifdef STRATA_HAVE_CUDA
#include "core/ops/cuda/cuda_backend.h"
#endif

namespace strata {
namespace {

absl::StatusOr<const Backend*> OpenGpu(const DeviceSpec& device, bool tf32) {
#ifdef STRATA_HAVE_CUDA
  const int count = CudaDeviceCount();
  if (device.index >= count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device ", device.ToString(), " asked for, but ",
        count == 0
            ? std::string("no CUDA device is visible to this process")
            : absl::StrCat(count, " CUDA device", count == 1 ? " is" : "s are", " visible (cuda:0",
                           count > 1 ? absl::StrCat("..cuda:", count - 1) : "", ")")));
  }
  CudaBackendOptions options;
  options.device = device.index;
  options.tf32 = tf32;
  STRATA_RETURN_IF_ERROR(RegisterCudaBackend(options));
  return BackendRegistry::Global().Find("cuda");
#else
  (void)tf32;
  return absl::FailedPreconditionError(
      absl::StrCat("device ", device.ToString(),
                   " asked for, but this build of Strata has no CUDA backend (nvcc was not "
                   "found when it was configured; see STRATA_CUDA)"));
#endif
}

}  // namespace

absl::StatusOr<const Backend*> OpenDevice(const DeviceSpec& device, bool tf32) {
  switch (device.device) {
    case Device::kCpu:
      return &HostBackend();
    case Device::kCheck:
      return BackendRegistry::Global().Find("check");
    case Device::kCuda:
      return OpenGpu(device, tf32);
  }
  return absl::InvalidArgumentError("unknown device");
}

}  // namespace strata
