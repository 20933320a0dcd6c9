#include "core/optim/parameter_optimizer.h"

namespace strata {

ParameterOptimizer::ParameterOptimizer(std::unique_ptr<Optimizer> optimizer, LrSchedule schedule,
                                       std::vector<Parameter*> parameters)
    : optimizer_(std::move(optimizer)),
      schedule_(std::move(schedule)),
      parameters_(std::move(parameters)) {
  const int slots = optimizer_->state_slots();
  for (Parameter* p : parameters_) {
    states_.push_back(slots > 0 ? Tensor::Zeros({slots, p->value.numel()}) : Tensor());
  }
}

void ParameterOptimizer::Step() {
  const float lr = schedule_.At(step_);
  ++step_;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Parameter* p = parameters_[i];
    optimizer_->Update(p->value.data(), p->grad.data(),
                       states_[i].defined() ? states_[i].data() : nullptr, p->value.numel(), lr,
                       step_);
  }
}

}  // namespace strata
