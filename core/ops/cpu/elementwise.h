// Element-wise CPU kernels (vectorised by the compiler, OpenMP-parallel for
// large sizes). All pointers are to `n` contiguous floats; in-place calls
// (out == in) are allowed where noted.
#ifndef STRATA_CORE_OPS_CPU_ELEMENTWISE_H_
#define STRATA_CORE_OPS_CPU_ELEMENTWISE_H_

#include <cstdint>

namespace strata {

// out = max(in, 0). In-place allowed.
void ReluForward(const float* in, float* out, int64_t n);
// grad_in = grad_out where out > 0, else 0. In-place (grad_in == grad_out) allowed.
void ReluBackward(const float* out, const float* grad_out, float* grad_in, int64_t n);
// out = in * mask. In-place allowed.
void Multiply(const float* in, const float* mask, float* out, int64_t n);
// out = a + b (out may be a or b).
void Add(const float* a, const float* b, float* out, int64_t n);
// y += alpha * x.
void Axpy(float alpha, const float* x, float* y, int64_t n);
// x *= alpha.
void Scale(float alpha, float* x, int64_t n);
// out[r, c] = bias[c] for every row r of a rows x cols matrix.
void BroadcastRows(const float* bias, float* out, int64_t rows, int64_t cols);
// sums[c] = sum over rows r of m[r, c]; with `accumulate`, sums[c] += it.
void SumRows(const float* m, float* sums, int64_t rows, int64_t cols, bool accumulate = false);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CPU_ELEMENTWISE_H_
