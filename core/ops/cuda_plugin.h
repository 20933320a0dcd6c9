// Loading the CUDA backend's plugin (core/ops/cuda_plugin_abi.h) the first
// time a program asks for a GPU.
//
// The plugin is lib/libstrata_cuda.so beside the program's bin/ folder
// (where a build puts it, and where a bundle ships it), or the file
// STRATA_CUDA_PLUGIN names. It needs cuBLAS and cuDNN of the major versions
// it was built with, which Strata does not ship. They are loaded by their
// full paths before the plugin from
//   1. the folders STRATA_CUDA_LIBRARY_PATH lists (colon-separated), when it
//      is set; else
//   2. python3's NVIDIA CUDA wheels (nvidia-cublas, nvidia-cudnn-cu13: what
//      PyTorch's CUDA builds install), found by asking the `python3` on
//      PATH, when it has any;
// otherwise the dynamic loader finds them for the plugin (the CUDA toolkit
// a build was made with, LD_LIBRARY_PATH, the system's folders). A library
// of another major version in 1 or 2 stops the load, naming both versions;
// so does one the loader found (the plugin's own check).
//
//   STRATA_ASSIGN_OR_RETURN(const CudaPluginApi* cuda, LoadCudaPlugin());
//   std::string why;
//   if (cuda->device_count(&why) == 0) ...
//
// Every failure is FailedPrecondition with a message naming what was
// looked for and where. The outcome of the first call, success or failure,
// is kept: later calls return it at once. Thread-safe.
#ifndef STRATA_CORE_OPS_CUDA_PLUGIN_H_
#define STRATA_CORE_OPS_CUDA_PLUGIN_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/ops/backend.h"
#include "core/ops/cuda_plugin_abi.h"

namespace strata {

absl::StatusOr<const CudaPluginApi*> LoadCudaPlugin();

// The "cuda" backend on options.device: loads the plugin, checks that the
// device is visible (FailedPrecondition "no CUDA device is visible to this
// process (...)" or "N CUDA devices are visible (cuda:0..cuda:N-1)"
// otherwise) and registers it.
absl::StatusOr<const Backend*> OpenCudaBackend(const CudaBackendOptions& options);

// Where this program looks for the plugin.
std::string CudaPluginPath();

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_PLUGIN_H_
