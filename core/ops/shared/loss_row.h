// Softmax cross-entropy of one row of logits: one copy of the arithmetic
// for the CPU loop (core/ops/cpu/loss_rows.h) and the CUDA kernel.
#ifndef STRATA_CORE_OPS_SHARED_LOSS_ROW_H_
#define STRATA_CORE_OPS_SHARED_LOSS_ROW_H_

#include <cmath>
#include <cstdint>

#include "core/ops/shared/host_device.h"

namespace strata {

// For `k` logits with `label` in [0, k): *loss = -log softmax(row)[label],
// *correct = 1 when the row's first arg-max is the label (else 0), and,
// unless grad is null, grad = (softmax - onehot) * row_scale. Sums and
// exponentials in double.
STRATA_HOST_DEVICE inline void SoftmaxCrossEntropyRow(const float* row, int32_t label, int64_t k,
                                                      float row_scale, float* loss, float* correct,
                                                      float* grad) {
  int64_t argmax = 0;
  for (int64_t j = 1; j < k; ++j) {
    if (row[j] > row[argmax]) argmax = j;
  }
  *correct = argmax == label ? 1.0f : 0.0f;
  const float max = row[argmax];
  double sum = 0.0;
  for (int64_t j = 0; j < k; ++j) sum += exp(static_cast<double>(row[j] - max));
  const double log_sum = log(sum);
  *loss = static_cast<float>(log_sum - (row[label] - max));
  if (grad == nullptr) return;
  for (int64_t j = 0; j < k; ++j) {
    const double p = exp(static_cast<double>(row[j] - max) - log_sum);
    grad[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * row_scale;
  }
}

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_LOSS_ROW_H_
