#include "runtime/whole_model_program.h"

#include "core/status.h"

namespace strata {

absl::Status WholeModelProgram::Load(StepContext& ctx) {
  batch_ = loader_.ForStep(ctx.iteration, slice_);
  ctx.rows = static_cast<int64_t>(batch_.labels.size());
  return absl::OkStatus();
}

void WholeModelProgram::TakeShare(const std::vector<int64_t>& rows, int rank) {
  slice_ = SliceOfRank(rows, rank);
  if (!slice_.has_value()) {
    loss_weight_ = 1.0f;  // even shares: bit for bit as before any change
    return;
  }
  int64_t global = 0;
  for (int64_t r : rows) global += r;
  loss_weight_ = static_cast<float>(static_cast<double>(rows[rank]) *
                                    static_cast<double>(rows.size()) / static_cast<double>(global));
}

absl::Status WholeModelProgram::Forward(StepContext& ctx) {
  STRATA_ASSIGN_OR_RETURN(Tensor images, ToDevice(model_.backend(), batch_.images));
  Tensor logits = model_.Forward(images, /*training=*/true);
  STRATA_ASSIGN_OR_RETURN(loss_, SoftmaxCrossEntropy(logits, batch_.labels, true));
  if (loss_weight_ != 1.0f) {
    STRATA_RETURN_IF_ERROR(model_.backend().Scale(loss_weight_, loss_.grad_logits));
  }
  ctx.loss = loss_.loss;
  return absl::OkStatus();
}

}  // namespace strata
