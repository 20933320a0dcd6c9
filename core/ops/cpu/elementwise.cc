#include "core/ops/cpu/elementwise.h"

#include <algorithm>
#include <cstring>

namespace strata {
namespace {
// Below this many elements a parallel region costs more than it saves.
constexpr int64_t kParallelThreshold = 1 << 15;
}  // namespace

void ReluForward(const float* in, float* out, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void ReluBackward(const float* out, const float* grad_out, float* grad_in, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) grad_in[i] = out[i] > 0.0f ? grad_out[i] : 0.0f;
}

void Multiply(const float* in, const float* mask, float* out, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] * mask[i];
}

void Add(const float* a, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void Axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void Scale(float alpha, float* x, int64_t n) {
#pragma omp parallel for simd if (n > kParallelThreshold) schedule(static)
  for (int64_t i = 0; i < n; ++i) x[i] *= alpha;
}

void BroadcastRows(const float* bias, float* out, int64_t rows, int64_t cols) {
#pragma omp parallel for if (rows * cols > kParallelThreshold) schedule(static)
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out + r * cols, bias, cols * sizeof(float));
}

void SumRows(const float* m, float* sums, int64_t rows, int64_t cols, bool accumulate) {
  if (!accumulate) std::fill(sums, sums + cols, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = m + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) sums[c] += row[c];
  }
}

}  // namespace strata
