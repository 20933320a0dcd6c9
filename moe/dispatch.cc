#include "moe/dispatch.h"

#include <cstring>

namespace strata::moe {
namespace {

inline const float* Row(const float* base, const Routing& r, int32_t e, int32_t s, int64_t dim) {
  return base + (static_cast<int64_t>(e) * r.capacity + s) * dim;
}
inline float* Row(float* base, const Routing& r, int32_t e, int32_t s, int64_t dim) {
  return base + (static_cast<int64_t>(e) * r.capacity + s) * dim;
}

}  // namespace

void Encode(const Routing& r, const float* x, int64_t dim, float* slots) {
  const int64_t choices = r.tokens * r.k;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < choices; ++c) {
    if (r.slot[c] < 0) continue;
    std::memcpy(Row(slots, r, r.expert[c], r.slot[c], dim), x + (c / r.k) * dim,
                static_cast<size_t>(dim) * sizeof(float));
  }
}

void Decode(const Routing& r, const float* expert_out, int64_t dim, float* y) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < r.tokens; ++t) {
    float* out = y + t * dim;
    std::memset(out, 0, static_cast<size_t>(dim) * sizeof(float));
    for (int i = 0; i < r.k; ++i) {
      const int64_t c = t * r.k + i;
      if (r.slot[c] < 0) continue;
      const float g = r.gate[c];
      const float* src = Row(expert_out, r, r.expert[c], r.slot[c], dim);
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d) out[d] += g * src[d];
    }
  }
}

void DecodeBackward(const Routing& r, const float* grad_y, const float* expert_out, int64_t dim,
                    float* grad_expert_out, float* grad_gate) {
  const int64_t choices = r.tokens * r.k;
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < choices; ++c) {
    if (r.slot[c] < 0) {
      grad_gate[c] = 0.0f;
      continue;
    }
    const float* dy = grad_y + (c / r.k) * dim;
    const float* out = Row(expert_out, r, r.expert[c], r.slot[c], dim);
    float* dout = Row(grad_expert_out, r, r.expert[c], r.slot[c], dim);
    const float g = r.gate[c];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t d = 0; d < dim; ++d) {
      dout[d] = g * dy[d];
      dot += dy[d] * out[d];
    }
    grad_gate[c] = dot;
  }
}

void EncodeBackward(const Routing& r, const float* grad_slots, int64_t dim, float* grad_x) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < r.tokens; ++t) {
    float* dx = grad_x + t * dim;
    std::memset(dx, 0, static_cast<size_t>(dim) * sizeof(float));
    for (int i = 0; i < r.k; ++i) {
      const int64_t c = t * r.k + i;
      if (r.slot[c] < 0) continue;
      const float* src = Row(grad_slots, r, r.expert[c], r.slot[c], dim);
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d) dx[d] += src[d];
    }
  }
}

}  // namespace strata::moe
