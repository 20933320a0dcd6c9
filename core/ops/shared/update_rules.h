// The optimizers' update rules, element by element: one copy of each
// formula, compiled into the CPU loops (core/ops/cpu/apply_update.h) and
// the CUDA kernels alike, so every device updates a parameter the same way.
//
// SGD is PyTorch's: d = g + wd*p; buf = mu*buf + d;
// p -= lr * (nesterov ? d + mu*buf : buf) (no buffer when mu is 0).
// Adam folds L2 weight decay into the gradient; AdamW decays the
// parameter itself (decoupled). The gradient used is g * grad_scale.
#ifndef STRATA_CORE_OPS_SHARED_UPDATE_RULES_H_
#define STRATA_CORE_OPS_SHARED_UPDATE_RULES_H_

#include <cmath>
#include <cstdint>

#include "core/ops/shared/host_device.h"

namespace strata {

enum class UpdateKind : uint8_t { kSgd, kAdam, kAdamW };

struct UpdateRule {
  UpdateKind kind = UpdateKind::kSgd;
  float momentum = 0.0f;  // sgd
  bool nesterov = false;  // sgd
  float weight_decay = 0.0f;
  float beta1 = 0.9f;  // adam, adamw
  float beta2 = 0.999f;
  float epsilon = 1e-8f;

  // Floats of state per parameter element: SGD's momentum buffer, Adam's
  // two moments (all of m, then all of v).
  int state_slots() const {
    if (kind != UpdateKind::kSgd) return 2;
    return momentum > 0.0f ? 1 : 0;
  }
};

// What every element of one update shares.
struct UpdateStep {
  float lr = 0.0f;
  float grad_scale = 1.0f;
  float step_size = 0.0f;       // adam: lr / (1 - beta1^step)
  float inv_sqrt_bias2 = 1.0f;  // adam: 1 / sqrt(1 - beta2^step)
};

// `step` is the parameter's 1-based update count.
UpdateStep PrepareUpdate(const UpdateRule& rule, float lr, int64_t step, float grad_scale);

// The rules element by element. They take the rule's values as plain
// scalars, which a loop keeps in registers (the CPU loops vectorize).

// SGD without momentum (rule.momentum == 0).
STRATA_HOST_DEVICE inline void SgdElement(float& p, float g, float lr, float grad_scale,
                                          float weight_decay) {
  p -= lr * (g * grad_scale + weight_decay * p);
}

// SGD with momentum `mu` > 0; `buf` is the element's buffer.
STRATA_HOST_DEVICE inline void MomentumElement(float& p, float g, float& buf, float lr,
                                               float grad_scale, float weight_decay, float mu,
                                               bool nesterov) {
  const float d = g * grad_scale + weight_decay * p;
  buf = mu * buf + d;
  p -= lr * (nesterov ? d + mu * buf : buf);
}

// Adam, or AdamW when `kDecoupled`; m and v are the element's moments.
template <bool kDecoupled>
STRATA_HOST_DEVICE inline void AdamElement(float& p, float g, float& m, float& v,
                                           const UpdateStep& s, float weight_decay, float beta1,
                                           float beta2, float epsilon) {
  float d = g * s.grad_scale;
  if (kDecoupled) {
    p -= s.lr * weight_decay * p;
  } else {
    d += weight_decay * p;
  }
  m = beta1 * m + (1.0f - beta1) * d;
  v = beta2 * v + (1.0f - beta2) * d * d;
  p -= s.step_size * m / (sqrtf(v) * s.inv_sqrt_bias2 + epsilon);
}

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_UPDATE_RULES_H_
