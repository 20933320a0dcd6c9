#include "core/ops/cpu/update_rules.h"

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

void ApplyUpdateRule(const UpdateRule& rule, float* p, const float* g, float* state, int64_t n,
                     float lr, int64_t step, float grad_scale) {
  const UpdateRule r = rule;
  const UpdateStep s = PrepareUpdate(rule, lr, step, grad_scale);
  if (r.kind == UpdateKind::kSgd) {
    float* buf = state;  // unused without momentum
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      SgdElement(r, s, p[i], g[i], r.momentum == 0.0f ? nullptr : buf + i);
    return;
  }
  float* m = state;
  float* v = state + n;
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i) AdamElement(r, s, p[i], g[i], m[i], v[i]);
}

}  // namespace strata
