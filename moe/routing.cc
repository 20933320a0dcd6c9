#include "moe/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata::moe {

int64_t CapacityFor(const CapacityRule& rule, int64_t tokens, int experts, int k,
                    int64_t largest_need) {
  if (rule.factor == 0) return std::max<int64_t>(1, largest_need);
  // k * |f| * ceil(T / E): the padded size (f > 0) or the cap on the need (f < 0).
  const int64_t per_expert = (tokens + experts - 1) / experts;
  const auto c =
      static_cast<int64_t>(std::ceil(k * std::abs(rule.factor) * static_cast<double>(per_expert)));
  if (rule.factor < 0) return std::max<int64_t>(1, std::min(largest_need, c));
  const int64_t a = std::max<int64_t>(1, rule.alignment);
  return std::max<int64_t>(a, (c + a - 1) / a * a);
}

GateOutput TopKGate(const float* logits, int64_t tokens, int experts, int k, bool normalize) {
  GateOutput g;
  g.tokens = tokens;
  g.k = k;
  g.probs.resize(static_cast<size_t>(tokens * experts));
  g.expert.resize(static_cast<size_t>(tokens * k));
  g.gate.resize(static_cast<size_t>(tokens * k));
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = logits + t * experts;
    float* p = g.probs.data() + t * experts;
    const float peak = *std::max_element(row, row + experts);
    float sum = 0.0f;
    for (int e = 0; e < experts; ++e) {
      p[e] = std::exp(row[e] - peak);
      sum += p[e];
    }
    for (int e = 0; e < experts; ++e) p[e] /= sum;
    // Top-k by repeated selection: k is small (1-4 in practice).
    int32_t* chosen = g.expert.data() + t * k;
    float* weight = g.gate.data() + t * k;
    float total = 0.0f;
    for (int i = 0; i < k; ++i) {
      int best = -1;
      for (int e = 0; e < experts; ++e) {
        if (std::find(chosen, chosen + i, e) != chosen + i) continue;
        if (best < 0 || p[e] > p[best]) best = e;
      }
      chosen[i] = best;
      weight[i] = p[best];
      total += p[best];
    }
    if (normalize) {
      for (int i = 0; i < k; ++i) weight[i] /= total;
    }
  }
  return g;
}

int64_t LargestNeed(const GateOutput& gate, int experts) {
  std::vector<int64_t> need(experts, 0);
  for (int32_t e : gate.expert) need[e]++;
  return *std::max_element(need.begin(), need.end());
}

Routing AssignSlots(const GateOutput& gate, int experts, const CapacityRule& rule,
                    bool prioritize_confident) {
  return AssignSlots(gate, experts,
                     CapacityFor(rule, gate.tokens, experts, gate.k, LargestNeed(gate, experts)),
                     prioritize_confident);
}

Routing AssignSlots(const GateOutput& gate, int experts, int64_t capacity,
                    bool prioritize_confident) {
  Routing r;
  r.tokens = gate.tokens;
  r.experts = experts;
  r.k = gate.k;
  r.expert = gate.expert;
  r.gate = gate.gate;
  r.capacity = capacity;
  r.slot.assign(r.expert.size(), -1);
  r.used.assign(experts, 0);
  std::vector<int64_t> order(static_cast<size_t>(gate.tokens));
  std::iota(order.begin(), order.end(), 0);
  if (prioritize_confident) {
    // Confidence: the softmax probability of the first choice (before any
    // normalisation over k, which makes it 1 for k = 1).
    auto top1 = [&gate, experts](int64_t t) {
      return gate.probs[t * experts + gate.expert[t * gate.k]];
    };
    std::stable_sort(order.begin(), order.end(),
                     [&top1](int64_t a, int64_t b) { return top1(a) > top1(b); });
  }
  for (int i = 0; i < gate.k; ++i) {
    for (int64_t t : order) {
      const int64_t c = t * gate.k + i;
      const int32_t e = r.expert[c];
      if (r.used[e] < r.capacity) {
        r.slot[c] = static_cast<int32_t>(r.used[e]++);
      } else {
        r.dropped++;
      }
    }
  }
  return r;
}

}  // namespace strata::moe
