// KernelCache<Kernel>: the kernels a layer made through its backend, one
// per batch size, each made on its first use and kept for the layer's
// life (a backend's kernel is planned for one shape: oneDNN's primitives,
// cuDNN's algorithm search).
//
//   KernelCache<PoolingKernel> kernels_;
//   STRATA_ASSIGN_OR_RETURN(PoolingKernel* k, kernels_.For(batch, [&](int64_t b) {
//     return backend_.MakePooling(ShapeFor(b));
//   }));
#ifndef STRATA_CORE_LAYERS_KERNEL_CACHE_H_
#define STRATA_CORE_LAYERS_KERNEL_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"

namespace strata {

template <typename Kernel>
class KernelCache {
 public:
  // The kernel for `batch`, made by `make(batch)` (which returns
  // absl::StatusOr<std::unique_ptr<Kernel>>) unless made before; a failure
  // to make it is returned and nothing is kept.
  template <typename Make>
  absl::StatusOr<Kernel*> For(int64_t batch, Make&& make) {
    auto it = kernels_.find(batch);
    if (it != kernels_.end()) return it->second.get();
    absl::StatusOr<std::unique_ptr<Kernel>> kernel = std::forward<Make>(make)(batch);
    if (!kernel.ok()) return kernel.status();
    return kernels_.emplace(batch, *std::move(kernel)).first->second.get();
  }

  bool empty() const { return kernels_.empty(); }

 private:
  std::map<int64_t, std::unique_ptr<Kernel>> kernels_;
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_KERNEL_CACHE_H_
