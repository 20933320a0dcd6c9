#include "core/layers/softmax_cross_entropy.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace strata {

absl::StatusOr<LossResult> SoftmaxCrossEntropy(const Tensor& logits,
                                               absl::Span<const int32_t> labels, bool want_grad,
                                               float grad_scale) {
  if (logits.rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss needs logits [N, K], got ", logits.shape().ToString()));
  }
  const int64_t n = logits.dim(0);
  const int64_t k = logits.dim(1);
  if (static_cast<int64_t>(labels.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("loss got ", labels.size(), " labels for ", n, " rows of logits"));
  }
  LossResult result;
  if (want_grad) result.grad_logits = Tensor::Empty(logits.shape());
  const float* x = logits.data();
  double total = 0.0;
  const float row_scale = grad_scale / static_cast<float>(n);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    if (label < 0 || label >= k) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", label, " of row ", i, " is outside [0, ", k, ")"));
    }
    const float* row = x + i * k;
    int64_t argmax = 0;
    for (int64_t j = 1; j < k; ++j) {
      if (row[j] > row[argmax]) argmax = j;
    }
    if (argmax == label) result.correct++;
    const float max = row[argmax];
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(static_cast<double>(row[j] - max));
    const double log_sum = std::log(sum);
    total += log_sum - (row[label] - max);
    if (want_grad) {
      float* g = result.grad_logits.data() + i * k;
      for (int64_t j = 0; j < k; ++j) {
        const double p = std::exp(static_cast<double>(row[j] - max) - log_sum);
        g[j] = static_cast<float>(p - (j == label ? 1.0 : 0.0)) * row_scale;
      }
    }
  }
  result.loss = total / static_cast<double>(n);
  return result;
}

}  // namespace strata
