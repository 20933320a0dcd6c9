#include "runtime/device_backend.h"

#include "absl/strings/str_cat.h"
#include "core/ops/cuda_plugin.h"

namespace strata {

absl::StatusOr<const Backend*> OpenDevice(const DeviceSpec& device, bool tf32) {
  switch (device.device) {
    case Device::kCpu:
      return &HostBackend();
    case Device::kCheck:
      return BackendRegistry::Global().Find("check");
    case Device::kCuda: {
      CudaBackendOptions options;
      options.device = device.index;
      options.tf32 = tf32;
      absl::StatusOr<const Backend*> gpu = OpenCudaBackend(options);
      if (!gpu.ok()) {
        return absl::Status(
            gpu.status().code(),
            absl::StrCat("device ", device.ToString(), " asked for, but ", gpu.status().message()));
      }
      return gpu;
    }
  }
  return absl::InvalidArgumentError("unknown device");
}

}  // namespace strata
