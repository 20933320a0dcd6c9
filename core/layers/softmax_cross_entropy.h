// SoftmaxCrossEntropy: the classification loss at the end of every model.
//
// Given logits {N, K} and N labels in [0, K), returns the mean over the batch
// of -log softmax(logits)[label], the number of rows whose arg-max equals the
// label, and (when asked) the gradient with respect to the logits,
// (softmax - onehot) * `grad_scale` / N, on the logits' device (through
// the backend registered for it). The loss and the count come to the host
// while the device goes on (Backend::DownloadLater): reading them waits for
// the loss's rows alone, so a step reads them once its later work is
// queued.
#ifndef STRATA_CORE_LAYERS_SOFTMAX_CROSS_ENTROPY_H_
#define STRATA_CORE_LAYERS_SOFTMAX_CROSS_ENTROPY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/tensor/tensor.h"
#include "core/util/pending_value.h"

namespace strata {

struct LossResult {
  PendingValue<double> loss;      // mean over the batch
  PendingValue<int64_t> correct;  // rows whose arg-max is the label
  Tensor grad_logits;             // {N, K}; undefined unless requested
};

// Fails with InvalidArgument when logits are not {N, K}, the label count is
// not N, or a label is outside [0, K). `grad_scale` lets a worker that holds
// part of a global batch scale its gradient to the global mean.
absl::StatusOr<LossResult> SoftmaxCrossEntropy(const Tensor& logits,
                                               absl::Span<const int32_t> labels, bool want_grad,
                                               float grad_scale = 1.0f);

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_SOFTMAX_CROSS_ENTROPY_H_
