#include "core/layers/softmax_cross_entropy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/status.h"

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
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= k) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " of row ", i, " is outside [0, ", k, ")"));
    }
  }
  STRATA_ASSIGN_OR_RETURN(const Backend* backend,
                          BackendRegistry::Global().ForDevice(logits.device()));
  Tensor host_labels = Tensor::Empty({n}, DType::kI32);
  std::copy(labels.begin(), labels.end(), host_labels.i32_data());
  STRATA_ASSIGN_OR_RETURN(Tensor device_labels, ToDevice(*backend, host_labels));
  Tensor row_loss = backend->Empty({n});
  Tensor row_correct = backend->Empty({n});
  LossResult result;
  if (want_grad) result.grad_logits = backend->Empty(logits.shape());
  STRATA_RETURN_IF_ERROR(backend->SoftmaxCrossEntropy(logits, device_labels, grad_scale, row_loss,
                                                      row_correct, result.grad_logits));
  // The rows come to the host while the device goes on; both totals come
  // from one read of them, when first asked for.
  struct Totals {
    double loss = 0.0;
    int64_t correct = 0;
  };
  const PendingValue<Tensor> losses = backend->DownloadLater(row_loss);
  const PendingValue<Tensor> hits = backend->DownloadLater(row_correct);
  const PendingValue<Totals> totals([losses, hits, n]() -> absl::StatusOr<Totals> {
    const absl::StatusOr<Tensor>& loss_rows = losses.Get();
    if (!loss_rows.ok()) return loss_rows.status();
    const absl::StatusOr<Tensor>& hit_rows = hits.Get();
    if (!hit_rows.ok()) return hit_rows.status();
    Totals t;
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      total += loss_rows->data()[i];
      t.correct += hit_rows->data()[i] > 0.5f ? 1 : 0;
    }
    t.loss = total / static_cast<double>(n);
    return t;
  });
  result.loss = totals.Then([](const Totals& t) { return t.loss; });
  result.correct = totals.Then([](const Totals& t) { return t.correct; });
  return result;
}

}  // namespace strata
