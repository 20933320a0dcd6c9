// Mixture-of-Experts routing and dispatch on the host (the meaning of each:
// core/ops/backend.h's routing ops), in O(tokens * k * D): tokens move into
// their experts' slots by index, never through a dense (tokens, experts,
// capacity) mask. Threaded over tokens (OpenMP) where tokens are independent.
#ifndef STRATA_CORE_OPS_CPU_ROUTING_KERNELS_H_
#define STRATA_CORE_OPS_CPU_ROUTING_KERNELS_H_

#include <cstdint>

#include "core/ops/shared/routed_choices.h"

namespace strata {

// TopKGateRow (core/ops/shared/gate_row.h) for each of `tokens` rows.
void TopKGateRows(const float* logits, int64_t tokens, int experts, int k, bool normalize,
                  float* probs, int32_t* expert, float* gate);
// TopKGateBackwardRow for each row; prob_grad {experts} may be null.
void TopKGateBackwardRows(const float* probs, const int32_t* expert, const float* gate,
                          const float* grad_gate, const float* prob_grad, int64_t tokens,
                          int experts, int k, bool normalize, float* grad_logits);
// Each choice's rank in its expert's queue and each expert's need (choices
// received): all first choices before any second, tokens in order, or, with
// `prioritize_confident`, in decreasing order of their first choice's
// probability (ties: the lower token).
void RankChoices(const float* probs, const int32_t* expert, int64_t tokens, int experts, int k,
                 bool prioritize_confident, int32_t* rank, int32_t* need);
// load[e] = mean over tokens of probs[t, e]; load[experts + e] = the
// fraction of tokens whose first choice is e.
void GateLoad(const float* probs, const int32_t* expert, int64_t tokens, int experts, int k,
              float* load);
// slots[slot_row(c)] = x[t] for every kept choice c of token t.
void DispatchTokens(const RoutedChoices& r, const float* x, int64_t dim, float* slots);
// y[t] = sum over t's kept choices c of gate[c] * rows[slot_row(c)] (weight
// 1 when gate is null); zeros for a token without a kept choice.
void CombineTokens(const RoutedChoices& r, const float* gate, const float* rows, int64_t dim,
                   float* y);
// Backward of CombineTokens: grad_rows[slot_row(c)] = gate[c] * grad_y[t] and
// grad_gate[c] = <grad_y[t], rows[slot_row(c)]> for kept choices;
// grad_gate[c] = 0 for dropped ones; no other row of grad_rows is written.
void CombineTokensBackward(const RoutedChoices& r, const float* gate, const float* grad_y,
                           const float* rows, int64_t dim, float* grad_rows, float* grad_gate);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_ROUTING_KERNELS_H_
