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

// out[t] = sum over t's kept choices of (weighted ? gate : 1) * rows[e, s];
// zeros for a token whose every choice was dropped.
void GatherRows(const Routing& r, const float* rows, int64_t dim, bool weighted, float* out) {
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < r.tokens; ++t) {
    float* dst = out + t * dim;
    std::memset(dst, 0, static_cast<size_t>(dim) * sizeof(float));
    for (int i = 0; i < r.k; ++i) {
      const int64_t c = t * r.k + i;
      if (r.slot[c] < 0) continue;
      const float g = weighted ? r.gate[c] : 1.0f;
      const float* src = Row(rows, r, r.expert[c], r.slot[c], dim);
#pragma omp simd
      for (int64_t d = 0; d < dim; ++d) dst[d] += g * src[d];
    }
  }
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
  GatherRows(r, expert_out, dim, /*weighted=*/true, y);
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
  GatherRows(r, grad_slots, dim, /*weighted=*/false, grad_x);
}

}  // namespace strata::moe
