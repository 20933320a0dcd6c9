// WholeModelProgram: the part of a StepProgram that trains the whole model
// on this process's shard of each global batch (single-process training, a
// ps-mode worker): load takes the iteration's batch, forward runs the model
// and the loss. Backward and what follows are the role's own.
#ifndef STRATA_RUNTIME_WHOLE_MODEL_PROGRAM_H_
#define STRATA_RUNTIME_WHOLE_MODEL_PROGRAM_H_

#include <optional>
#include <vector>

#include "core/data/prefetching_loader.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/model/model.h"
#include "runtime/step_loop.h"

namespace strata {

class WholeModelProgram : public StepProgram {
 public:
  absl::Status Load(StepContext& ctx) override;
  // Sets ctx.loss.
  absl::Status Forward(StepContext& ctx) override;

  // From the next Load on: this process is rank `rank` of the ranks that
  // take rows[r] rows of each global batch; its loss gradient is weighted
  // by its rows over an even share's (1 for even shares).
  void TakeShare(const std::vector<int64_t>& rows, int rank);

 protected:
  // `loader` and `model` must outlive the program.
  WholeModelProgram(PrefetchingLoader& loader, Model& model) : loader_(loader), model_(model) {}
  Model& model() { return model_; }
  // The loss of the iteration's forward, with the gradient of the logits.
  const LossResult& loss() const { return loss_; }

 private:
  PrefetchingLoader& loader_;
  Model& model_;
  std::optional<BatchSlice> slice_;  // unset: the loader's even share
  float loss_weight_ = 1.0f;
  Batch batch_;
  LossResult loss_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_WHOLE_MODEL_PROGRAM_H_
