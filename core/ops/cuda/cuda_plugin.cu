// The CUDA backend's plugin entry (core/ops/cuda_plugin_abi.h): the one
// symbol programs look up in libstrata_cuda.so, and the checks of the
// NVIDIA libraries the plugin found.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "core/ops/cuda/cuda_backend.h"
#include "core/ops/cuda_plugin_abi.h"
#include "core/status.h"

namespace strata {
namespace {

// The file the library holding `function` was loaded from.
std::string LoadedFrom(const void* function) {
  Dl_info info;
  if (dladdr(function, &info) == 0 || info.dli_fname == nullptr) return "an unknown file";
  return info.dli_fname;
}

struct Version {
  int major = -1;
  int minor = -1;
  int patch = -1;
  std::string ToString() const { return absl::StrCat(major, ".", minor, ".", patch); }
};

// A library's version through its GetProperty function (cudnnGetProperty,
// cublasGetProperty).
template <typename Result>
Version LoadedVersion(Result (*get_property)(libraryPropertyType, int*)) {
  Version v;
  get_property(MAJOR_VERSION, &v.major);
  get_property(MINOR_VERSION, &v.minor);
  get_property(PATCH_LEVEL, &v.patch);
  return v;
}

constexpr Version kBuiltCudnn{CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL};
constexpr Version kBuiltCublas{CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH};

absl::Status CheckMajor(const char* library, const Version& built, const Version& loaded,
                        const void* function) {
  if (loaded.major == built.major) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      library, ": Strata's CUDA backend was built with ", built.ToString(), " but loaded ",
      loaded.ToString(), " from ", LoadedFrom(function), "; their major versions differ"));
}

absl::Status CheckLibraries() {
  STRATA_RETURN_IF_ERROR(CheckMajor("cuBLAS", kBuiltCublas, LoadedVersion(&cublasGetProperty),
                                    reinterpret_cast<const void*>(&cublasGetProperty)));
  return CheckMajor("cuDNN", kBuiltCudnn, LoadedVersion(&cudnnGetProperty),
                    reinterpret_cast<const void*>(&cudnnGetProperty));
}

std::string DescribeLibraries() {
  int runtime = 0;
  int driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  auto cuda = [](int v) { return absl::StrCat(v / 1000, ".", (v % 1000) / 10); };
  return absl::StrCat("CUDA runtime ", cuda(runtime), " (driver ",
                      driver == 0 ? std::string("none") : cuda(driver), "), cuBLAS ",
                      LoadedVersion(&cublasGetProperty).ToString(), " (",
                      LoadedFrom(reinterpret_cast<const void*>(&cublasGetProperty)), "), cuDNN ",
                      LoadedVersion(&cudnnGetProperty).ToString(), " (",
                      LoadedFrom(reinterpret_cast<const void*>(&cudnnGetProperty)), ")");
}

}  // namespace
}  // namespace strata

extern "C" __attribute__((visibility("default"))) const strata::CudaPluginApi*
strata_cuda_plugin() {
  static const strata::CudaPluginApi api = [] {
    strata::CudaPluginApi table;
    table.device_count = &strata::CudaDeviceCount;
    table.check_libraries = &strata::CheckLibraries;
    table.register_backend = &strata::RegisterCudaBackend;
    table.describe_libraries = &strata::DescribeLibraries;
    return table;
  }();
  return &api;
}
