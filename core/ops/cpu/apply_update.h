// The optimizers' update rules (core/ops/shared/update_rules.h) over host
// arrays.
#ifndef STRATA_CORE_OPS_CPU_APPLY_UPDATE_H_
#define STRATA_CORE_OPS_CPU_APPLY_UPDATE_H_

#include <cstdint>

#include "core/ops/shared/update_rules.h"

namespace strata {

// One update of n elements (OpenMP-parallel for large n). `state` holds
// rule.state_slots() arrays of n floats, back to back; `step` is the
// parameter's 1-based update count.
void ApplyUpdateRule(const UpdateRule& rule, float* param, const float* grad, float* state,
                     int64_t n, float lr, int64_t step, float grad_scale);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_APPLY_UPDATE_H_
