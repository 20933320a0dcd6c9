// Naive reference kernels: the obvious loops, in double precision, that the
// oneDNN-backed layers are checked against. Slow on purpose; tests only.
#ifndef STRATA_TESTS_CORE_REFERENCE_OPS_H_
#define STRATA_TESTS_CORE_REFERENCE_OPS_H_

#include "core/tensor/tensor.h"

namespace strata::reference {

// x {N, H, W, C}, weight {O, C, K, K}, bias {O} -> {N, Ho, Wo, O}.
Tensor Conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride,
              int64_t padding);
// Max or average (excluding padding) pooling, x {N, H, W, C}.
Tensor Pool2d(const Tensor& x, bool max, int64_t kernel, int64_t stride, int64_t padding);
// Batch normalisation with batch statistics (biased variance), x {N, H, W, C}.
Tensor BatchNormTrain(const Tensor& x, const Tensor& gamma, const Tensor& beta, float epsilon);
// x {N, F}, weight {O, F}, bias {O} -> {N, O}.
Tensor Linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

}  // namespace strata::reference

#endif  // STRATA_TESTS_CORE_REFERENCE_OPS_H_
