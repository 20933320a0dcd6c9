// Softmax cross-entropy, row by row, on the host.
#ifndef STRATA_CORE_OPS_CPU_LOSS_ROWS_H_
#define STRATA_CORE_OPS_CPU_LOSS_ROWS_H_

#include <cstdint>

namespace strata {

// For each of n rows of k logits with its label in [0, k):
// row_loss[i] = -log softmax(row)[label], row_correct[i] = 1 when the
// row's first arg-max is the label (else 0), and, unless grad is null,
// grad row = (softmax - onehot) * grad_scale / n. Labels are the
// caller's to check.
void SoftmaxCrossEntropyRows(const float* logits, const int32_t* labels, int64_t n, int64_t k,
                             float grad_scale, float* row_loss, float* row_correct, float* grad);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_LOSS_ROWS_H_
