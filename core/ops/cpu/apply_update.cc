#include "core/ops/cpu/apply_update.h"

namespace strata {

namespace {

template <bool kDecoupled>
void AdamLoop(const UpdateRule& rule, const UpdateStep& s, float* p, const float* g, float* state,
              int64_t n) {
  float* m = state;
  float* v = state + n;
  const float wd = rule.weight_decay, b1 = rule.beta1, b2 = rule.beta2, eps = rule.epsilon;
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    AdamElement<kDecoupled>(p[i], g[i], m[i], v[i], s, wd, b1, b2, eps);
}

}  // namespace

void ApplyUpdateRule(const UpdateRule& rule, float* p, const float* g, float* state, int64_t n,
                     float lr, int64_t step, float grad_scale) {
  // Each rule its own loop over scalars held in registers, so that each
  // vectorizes.
  const UpdateStep s = PrepareUpdate(rule, lr, step, grad_scale);
  const float wd = rule.weight_decay;
  if (rule.kind == UpdateKind::kSgd && rule.momentum == 0.0f) {
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) SgdElement(p[i], g[i], lr, grad_scale, wd);
  } else if (rule.kind == UpdateKind::kSgd) {
    float* buf = state;
    const float mu = rule.momentum;
    const bool nesterov = rule.nesterov;
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      MomentumElement(p[i], g[i], buf[i], lr, grad_scale, wd, mu, nesterov);
    }
  } else if (rule.kind == UpdateKind::kAdam) {
    AdamLoop<false>(rule, s, p, g, state, n);
  } else {
    AdamLoop<true>(rule, s, p, g, state, n);
  }
}

}  // namespace strata
