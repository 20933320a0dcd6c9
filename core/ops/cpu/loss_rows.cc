#include "core/ops/cpu/loss_rows.h"

#include <cmath>

namespace strata {

void SoftmaxCrossEntropyRows(const float* logits, const int32_t* labels, int64_t n, int64_t k,
                             float grad_scale, float* row_loss, float* row_correct, float* grad) {
  const float row_scale = grad_scale / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    const float* row = logits + i * k;
    int64_t argmax = 0;
    for (int64_t j = 1; j < k; ++j) {
      if (row[j] > row[argmax]) argmax = j;
    }
    row_correct[i] = argmax == label ? 1.0f : 0.0f;
    const float max = row[argmax];
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j] - max));
    const double log_sum = std::log(sum);
    row_loss[i] = static_cast<float>(log_sum - (row[label] - max));
    if (grad == nullptr) continue;
    float* g = grad + i * k;
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(static_cast<double>(row[j] - max) - log_sum);
      g[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * row_scale;
    }
  }
}

}  // namespace strata
