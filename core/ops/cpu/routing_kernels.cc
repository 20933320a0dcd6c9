#include "core/ops/cpu/routing_kernels.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/ops/shared/gate_row.h"

namespace strata {

void TopKGateRows(const float* logits, int64_t tokens, int experts, int k, bool normalize,
                  float* probs, int32_t* expert, float* gate) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    TopKGateRow(logits + t * experts, experts, k, normalize, probs + t * experts, expert + t * k,
                gate + t * k);
  }
}

void TopKGateBackwardRows(const float* probs, const int32_t* expert, const float* gate,
                          const float* grad_gate, const float* prob_grad, int64_t tokens,
                          int experts, int k, bool normalize, float* grad_logits) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    TopKGateBackwardRow(probs + t * experts, expert + t * k, gate + t * k, grad_gate + t * k,
                        prob_grad, experts, k, normalize, grad_logits + t * experts);
  }
}

void RankChoices(const float* probs, const int32_t* expert, int64_t tokens, int experts, int k,
                 bool prioritize_confident, int32_t* rank, int32_t* need) {
  std::vector<int64_t> order(static_cast<size_t>(tokens));
  std::iota(order.begin(), order.end(), 0);
  if (prioritize_confident) {
    // Confidence: the softmax probability of the first choice (before any
    // normalisation over k, which makes it 1 for k = 1).
    auto top1 = [&](int64_t t) { return probs[t * experts + expert[t * k]]; };
    std::stable_sort(order.begin(), order.end(),
                     [&top1](int64_t a, int64_t b) { return top1(a) > top1(b); });
  }
  std::fill(need, need + experts, 0);
  for (int i = 0; i < k; ++i) {
    for (int64_t t : order) {
      const int64_t c = t * k + i;
      rank[c] = need[expert[c]]++;
    }
  }
}

void GateLoad(const float* probs, const int32_t* expert, int64_t tokens, int experts, int k,
              float* load) {
  std::vector<double> mean(static_cast<size_t>(experts), 0.0);
  std::vector<int64_t> first(static_cast<size_t>(experts), 0);
  for (int64_t t = 0; t < tokens; ++t) {
    first[expert[t * k]]++;
    for (int e = 0; e < experts; ++e) mean[e] += probs[t * experts + e];
  }
  const double n = static_cast<double>(std::max<int64_t>(tokens, 1));
  for (int e = 0; e < experts; ++e) {
    load[e] = static_cast<float>(mean[e] / n);
    load[experts + e] = static_cast<float>(static_cast<double>(first[e]) / n);
  }
}

void DispatchTokens(const RoutedChoices& r, const float* x, int64_t dim, float* slots) {
  const int64_t choices = r.tokens * r.k;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < choices; ++c) {
    if (!r.kept(c)) continue;
    std::memcpy(slots + r.slot_row(c) * dim, x + (c / r.k) * dim,
                static_cast<size_t>(dim) * sizeof(float));
  }
}

void CombineTokens(const RoutedChoices& r, const float* gate, const float* rows, int64_t dim,
                   float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < r.tokens; ++t) {
    float* dst = y + t * dim;
    std::memset(dst, 0, static_cast<size_t>(dim) * sizeof(float));
    for (int i = 0; i < r.k; ++i) {
      const int64_t c = t * r.k + i;
      if (!r.kept(c)) continue;
      const float g = gate != nullptr ? gate[c] : 1.0f;
      const float* src = rows + r.slot_row(c) * dim;
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d) dst[d] += g * src[d];
    }
  }
}

void CombineTokensBackward(const RoutedChoices& r, const float* gate, const float* grad_y,
                           const float* rows, int64_t dim, float* grad_rows, float* grad_gate) {
  const int64_t choices = r.tokens * r.k;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < choices; ++c) {
    if (!r.kept(c)) {
      grad_gate[c] = 0.0f;
      continue;
    }
    const float* dy = grad_y + (c / r.k) * dim;
    const float* out = rows + r.slot_row(c) * dim;
    float* dout = grad_rows + r.slot_row(c) * dim;
    const float g = gate[c];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < dim; ++d) {
      dout[d] = g * dy[d];
      dot += dy[d] * out[d];
    }
    grad_gate[c] = dot;
  }
}

}  // namespace strata
