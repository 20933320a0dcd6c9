#include "core/ops/cpu/apply_update.h"

namespace strata {

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
