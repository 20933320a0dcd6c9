// ParameterOptimizer: applies an Optimizer and an LrSchedule to a list of
// model parameters, owning the per-parameter state (momentum buffers, Adam
// moments, on each parameter's device) and the step count. Each update runs
// on the parameter's device (Backend::ApplyUpdate).
//
//   ParameterOptimizer opt(std::move(optimizer), schedule, model->parameters());
//   model->Backward(grad);
//   opt.Step();   // one update of every parameter, lr from the schedule
#ifndef STRATA_CORE_OPTIM_PARAMETER_OPTIMIZER_H_
#define STRATA_CORE_OPTIM_PARAMETER_OPTIMIZER_H_

#include <memory>
#include <vector>

#include "core/layers/layer.h"
#include "core/ops/backend.h"
#include "core/optim/lr_schedule.h"
#include "core/optim/optimizer.h"

namespace strata {

class ParameterOptimizer {
 public:
  ParameterOptimizer(std::unique_ptr<Optimizer> optimizer, LrSchedule schedule,
                     std::vector<Parameter*> parameters);

  // Updates every parameter from its grad with the learning rate of the
  // current step, then advances the step.
  void Step();
  int64_t step() const { return step_; }
  void set_step(int64_t step) { step_ = step; }
  float current_lr() const { return schedule_.At(step_); }
  const Optimizer& optimizer() const { return *optimizer_; }

  // The state of parameter i, shape {slots, numel} (undefined when the
  // optimizer keeps no state), for checkpoints.
  const std::vector<Tensor>& states() const { return states_; }
  const std::vector<Parameter*>& parameters() const { return parameters_; }

 private:
  std::unique_ptr<Optimizer> optimizer_;
  LrSchedule schedule_;
  std::vector<Parameter*> parameters_;
  std::vector<Tensor> states_;
  std::vector<const Backend*> backends_;  // per parameter: the one of its device
  int64_t step_ = 0;
};

}  // namespace strata

#endif  // STRATA_CORE_OPTIM_PARAMETER_OPTIMIZER_H_
