#include "runtime/whole_model_program.h"

#include "core/status.h"

namespace strata {

absl::Status WholeModelProgram::Load(StepContext& ctx) {
  batch_ = loader_.ForStep(ctx.iteration);
  return absl::OkStatus();
}

absl::Status WholeModelProgram::Forward(StepContext& ctx) {
  Tensor logits = model_.Forward(batch_.images, /*training=*/true);
  STRATA_ASSIGN_OR_RETURN(loss_, SoftmaxCrossEntropy(logits, batch_.labels, true));
  ctx.loss = loss_.loss;
  return absl::OkStatus();
}

}  // namespace strata
