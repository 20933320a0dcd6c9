// Where a Mixture-of-Experts routing sends each token (Tutel/GShard style),
// as indices: token t's i-th choice, c = t * k + i, goes to expert[c] at
// row rank[c] of that expert's slots, and is kept when its rank is below the
// capacity (the rows each expert has); the rest are dropped. Slot buffers
// are {experts, capacity, D}. Shared by the CPU loops and the CUDA kernels.
#ifndef STRATA_CORE_OPS_SHARED_ROUTED_CHOICES_H_
#define STRATA_CORE_OPS_SHARED_ROUTED_CHOICES_H_

#include <cstdint>

#include "core/ops/shared/host_device.h"

namespace strata {

struct RoutedChoices {
  const int32_t* expert = nullptr;  // {tokens, k}, in [0, experts)
  const int32_t* rank = nullptr;    // {tokens, k}, >= 0
  int64_t tokens = 0;
  int k = 0;
  int64_t capacity = 0;

  STRATA_HOST_DEVICE bool kept(int64_t c) const { return rank[c] < capacity; }
  // Choice c's row of a {experts, capacity, dim} slot buffer, as an offset
  // in rows.
  STRATA_HOST_DEVICE int64_t slot_row(int64_t c) const {
    return static_cast<int64_t>(expert[c]) * capacity + rank[c];
  }
};

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_ROUTED_CHOICES_H_
