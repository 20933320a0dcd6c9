// One token's Mixture-of-Experts gate, forward and backward: one copy of
// the arithmetic for the CPU loop (core/ops/cpu/routing_kernels.h) and the
// CUDA kernel (core/ops/cuda/routing_kernels.cu).
#ifndef STRATA_CORE_OPS_SHARED_GATE_ROW_H_
#define STRATA_CORE_OPS_SHARED_GATE_ROW_H_

#include <cmath>
#include <cstdint>

#include "core/ops/shared/host_device.h"

namespace strata {

// probs = softmax(logits) over `experts`; then the k most probable experts,
// most probable first (ties: the lower index), into chosen[0..k) and their
// probabilities into weight[0..k), divided by their sum when `normalize`.
// Requires 1 <= k <= experts.
STRATA_HOST_DEVICE inline void TopKGateRow(const float* logits, int experts, int k, bool normalize,
                                           float* probs, int32_t* chosen, float* weight) {
  float peak = logits[0];
  for (int e = 1; e < experts; ++e) peak = logits[e] > peak ? logits[e] : peak;
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) {
    probs[e] = expf(logits[e] - peak);
    sum += probs[e];
  }
  for (int e = 0; e < experts; ++e) probs[e] /= sum;
  // Repeated selection: k is small (1-4 in practice).
  float total = 0.0f;
  for (int i = 0; i < k; ++i) {
    int best = -1;
    for (int e = 0; e < experts; ++e) {
      bool taken = false;
      for (int j = 0; j < i; ++j) taken = taken || chosen[j] == e;
      if (taken) continue;
      if (best < 0 || probs[e] > probs[best]) best = e;
    }
    chosen[i] = best;
    weight[i] = probs[best];
    total += probs[best];
  }
  if (normalize) {
    for (int i = 0; i < k; ++i) weight[i] /= total;
  }
}

// The gradient of the loss with respect to one token's logits, from that of
// its k weights (grad_weight) and `prob_grad`, a gradient added to every
// token's probabilities alike (the load-balancing loss's): first
// d(loss)/d(probs) into grad_logits, then through the softmax.
STRATA_HOST_DEVICE inline void TopKGateBackwardRow(const float* probs, const int32_t* chosen,
                                                   const float* weight, const float* grad_weight,
                                                   const float* prob_grad, int experts, int k,
                                                   bool normalize, float* grad_logits) {
  for (int e = 0; e < experts; ++e) grad_logits[e] = prob_grad != nullptr ? prob_grad[e] : 0.0f;
  if (normalize) {
    // weight_i = p_i / s with s the sum of the chosen p: d/dp_i = (g_i - <g, w>) / s.
    float sum = 0.0f, weighted = 0.0f;
    for (int i = 0; i < k; ++i) sum += probs[chosen[i]];
    for (int i = 0; i < k; ++i) weighted += grad_weight[i] * weight[i];
    for (int i = 0; i < k; ++i) grad_logits[chosen[i]] += (grad_weight[i] - weighted) / sum;
  } else {
    for (int i = 0; i < k; ++i) grad_logits[chosen[i]] += grad_weight[i];
  }
  // Softmax: dz = p * (dp - <p, dp>).
  float dot = 0.0f;
  for (int e = 0; e < experts; ++e) dot += probs[e] * grad_logits[e];
  for (int e = 0; e < experts; ++e) grad_logits[e] = probs[e] * (grad_logits[e] - dot);
}

}  // namespace strata

#endif  // STRATA_CORE_OPS_SHARED_GATE_ROW_H_
