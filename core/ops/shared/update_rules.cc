#include "core/ops/shared/update_rules.h"

#include <cmath>

namespace strata {

UpdateStep PrepareUpdate(const UpdateRule& rule, float lr, int64_t step, float grad_scale) {
  UpdateStep s;
  s.lr = lr;
  s.grad_scale = grad_scale;
  if (rule.kind != UpdateKind::kSgd) {
    const float bias1 = 1.0f - static_cast<float>(std::pow(rule.beta1, step));
    const float bias2 = 1.0f - static_cast<float>(std::pow(rule.beta2, step));
    s.step_size = lr / bias1;
    s.inv_sqrt_bias2 = 1.0f / std::sqrt(bias2);
  }
  return s;
}

}  // namespace strata
