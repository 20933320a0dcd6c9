#include "core/optim/parameter_optimizer.h"

#include "core/status.h"

namespace strata {

ParameterOptimizer::ParameterOptimizer(std::unique_ptr<Optimizer> optimizer, LrSchedule schedule,
                                       std::vector<Parameter*> parameters)
    : optimizer_(std::move(optimizer)),
      schedule_(std::move(schedule)),
      parameters_(std::move(parameters)) {
  const int slots = optimizer_->state_slots();
  for (Parameter* p : parameters_) {
    const Backend& backend = **BackendRegistry::Global().ForDevice(p->value.device());
    backends_.push_back(&backend);
    states_.push_back(slots > 0 ? backend.Zeros({slots, p->value.numel()}) : Tensor());
  }
}

void ParameterOptimizer::Step() {
  const float lr = schedule_.At(step_);
  ++step_;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter* p = parameters_[i];
    STRATA_CHECK_OK(backends_[i]->ApplyUpdate(optimizer_->rule(), p->value, p->grad, states_[i], lr,
                                              step_, 1.0f));
  }
}

}  // namespace strata
