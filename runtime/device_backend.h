// The backend a process computes on, from the device its user named
// (training.device, --device): the host, the checking device, or a GPU
// (the CUDA backend's plugin, core/ops/cuda_plugin.h).
#ifndef STRATA_RUNTIME_DEVICE_BACKEND_H_
#define STRATA_RUNTIME_DEVICE_BACKEND_H_

#include "absl/status/statusor.h"
#include "core/ops/backend.h"

namespace strata {

// The backend of `device`, ready for a model. A GPU that is not there
// fails with FailedPrecondition naming the device asked for and what was
// found (the visible GPUs, the libraries missing, or that this build has
// no CUDA backend); `tf32` lets a GPU's products and convolutions use
// TensorFloat-32. A process opens one GPU: a later call for another fails.
absl::StatusOr<const Backend*> OpenDevice(const DeviceSpec& device, bool tf32);

}  // namespace strata

#endif  // STRATA_RUNTIME_DEVICE_BACKEND_H_
