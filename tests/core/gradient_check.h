// Finite-difference gradient checks for layers.
//
// The scalar checked is L = sum(R * layer.Forward(x)) for a fixed random R,
// so dL/dy = R. Backward(R) must match central differences of L with
// respect to sampled elements of the input and of every parameter.
#ifndef STRATA_TESTS_CORE_GRADIENT_CHECK_H_
#define STRATA_TESTS_CORE_GRADIENT_CHECK_H_

#include "core/layers/layer.h"

namespace strata::testing {

struct GradientCheckOptions {
  float step = 1e-2f;           // central-difference step h
  float tolerance = 2e-2f;      // |analytic - numeric| <= tolerance * max(1, |numeric|)
  int samples_per_tensor = 40;  // elements checked per tensor (all when fewer)
  bool check_input = true;
  uint64_t seed = 7;
};

// Adds a GoogleTest failure per mismatching element (naming the tensor and
// index). `input` is {N, per-sample input shape}.
void ExpectGradientsMatch(Layer& layer, const Tensor& input,
                          const GradientCheckOptions& options = {});

// A tensor of the given shape with values uniform in [-1, 1).
Tensor RandomTensor(const Shape& shape, uint64_t seed);

}  // namespace strata::testing

#endif  // STRATA_TESTS_CORE_GRADIENT_CHECK_H_
