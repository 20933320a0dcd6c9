// Optimizers as element-wise update rules.
//
// An Optimizer holds no per-parameter state itself: the caller owns the state
// (state_slots() floats per parameter element, zero before the first step) and
// passes it in. That lets the single-process trainer keep state per
// parameter, and a parameter server keep it per key-range chunk, with the
// same code and the same math.
//
//   auto opt = Optimizer::Create({.type = "sgd", .lr = 0.01f, .momentum = 0.9f});
//   (*opt)->Update(w, g, state, n, /*lr=*/0.01f, /*step=*/1);
#ifndef STRATA_CORE_OPTIM_OPTIMIZER_H_
#define STRATA_CORE_OPTIM_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/ops/cpu/apply_update.h"

namespace strata {

struct OptimizerConfig {
  std::string type = "sgd";  // "sgd", "adam" or "adamw"
  float lr = 0.01f;
  float momentum = 0.0f;      // sgd
  bool nesterov = false;      // sgd
  float weight_decay = 0.0f;  // L2 for sgd/adam, decoupled for adamw
  float beta1 = 0.9f;         // adam, adamw
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
};

class Optimizer {
 public:
  // Fails with InvalidArgument naming the bad field (unknown type, lr <= 0,
  // momentum outside [0, 1), nesterov without momentum, betas outside [0, 1)).
  static absl::StatusOr<std::unique_ptr<Optimizer>> Create(const OptimizerConfig& config);

  const OptimizerConfig& config() const { return config_; }
  // The element-wise rule (core/ops/cpu/apply_update.h) every device applies.
  const UpdateRule& rule() const { return rule_; }
  // Floats of state per parameter element.
  int state_slots() const { return rule_.state_slots(); }
  // One update of `n` elements with learning rate `lr`. `state` holds
  // state_slots() arrays of n floats, back to back. `step` is this
  // parameter's 1-based update count. The gradient used is grad *
  // `grad_scale` (a server passes 1/workers to average summed pushes without
  // an extra pass). Thread-compatible: concurrent calls on disjoint memory
  // are safe.
  void Update(float* param, const float* grad, float* state, int64_t n, float lr, int64_t step,
              float grad_scale = 1.0f) const {
    ApplyUpdateRule(rule_, param, grad, state, n, lr, step, grad_scale);
  }

 private:
  Optimizer(OptimizerConfig config, UpdateRule rule) : config_(std::move(config)), rule_(rule) {}
  OptimizerConfig config_;
  UpdateRule rule_;
};

}  // namespace strata

#endif  // STRATA_CORE_OPTIM_OPTIMIZER_H_
