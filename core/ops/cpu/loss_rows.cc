#include "core/ops/cpu/loss_rows.h"

#include "core/ops/shared/loss_row.h"

namespace strata {

void SoftmaxCrossEntropyRows(const float* logits, const int32_t* labels, int64_t n, int64_t k,
                             float grad_scale, float* row_loss, float* row_correct, float* grad) {
  const float row_scale = grad_scale / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) {
    SoftmaxCrossEntropyRow(logits + i * k, labels[i], k, row_scale, row_loss + i, row_correct + i,
                           grad == nullptr ? nullptr : grad + i * k);
  }
}

}  // namespace strata
