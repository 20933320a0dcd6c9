// The contract between Strata's programs and the CUDA backend, which is a
// plugin (lib/libstrata_cuda.so, built from core/ops/cuda) that a program
// loads only when it is asked to compute on a GPU: core/ops/cuda_plugin.h
// finds and loads it. Programs on the host therefore never load the CUDA
// runtime, cuBLAS or cuDNN, and a portable bundle ships without those
// libraries (a GPU machine has them).
//
// The plugin exports one C function, kCudaPluginEntry, returning a
// CudaPluginApi. It calls back into the program for everything Strata's
// core defines (the backend registry, tensors, the allocator table): every
// program exports those symbols (core/ops/plugin_exports.list), so the
// plugin registers its backend in the program's own registry.
// kCudaPluginAbi changes whenever this table, CudaBackendOptions or any
// class the plugin shares with the program changes layout; a program
// refuses a plugin of another ABI, naming both.
#ifndef STRATA_CORE_OPS_CUDA_PLUGIN_ABI_H_
#define STRATA_CORE_OPS_CUDA_PLUGIN_ABI_H_

#include <string>

#include "absl/status/status.h"

namespace strata {

inline constexpr int kCudaPluginAbi = 1;
inline constexpr char kCudaPluginEntry[] = "strata_cuda_plugin";

struct CudaBackendOptions {
  int device = 0;  // which visible GPU (cudaSetDevice)
  // TensorFloat-32 on the tensor cores for matrix products and
  // convolutions (about 1e-3 relative error); off, every product is full
  // float32.
  bool tf32 = false;
};

struct CudaPluginApi {
  int abi = kCudaPluginAbi;
  // Number of visible CUDA devices; 0 when there is no GPU or no driver,
  // and then *why says what the CUDA runtime answered.
  int (*device_count)(std::string* why) = nullptr;
  // OK when the cuBLAS and cuDNN the plugin loaded have the major versions
  // it was built with; otherwise FailedPrecondition naming both versions
  // and the file loaded.
  absl::Status (*check_libraries)() = nullptr;
  // Registers the "cuda" backend and the device allocator on
  // options.device, which becomes the calling thread's device.
  // FailedPrecondition when no device is present; calls after the first do
  // nothing, but one naming another device fails (a process computes on
  // one GPU).
  absl::Status (*register_backend)(const CudaBackendOptions& options) = nullptr;
  // "CUDA runtime 13.0, cuBLAS 13.1.0, cuDNN 9.19.0 (<folder>)": what the
  // plugin runs with, for logs and reports.
  std::string (*describe_libraries)() = nullptr;
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_PLUGIN_ABI_H_
