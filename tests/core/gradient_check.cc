#include "tests/core/gradient_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace strata::testing {

Tensor RandomTensor(const Shape& shape, uint64_t seed) {
  Rng rng(seed);
  Tensor t = Tensor::Empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.Uniform(-1.0f, 1.0f);
  return t;
}

namespace {

double Objective(Layer& layer, const Tensor& input, const Tensor& weights) {
  Tensor y = layer.Forward(input, /*training=*/true);
  double sum = 0.0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    sum += static_cast<double>(y.data()[i]) * weights.data()[i];
  }
  return sum;
}

void CheckTensor(Layer& layer, const Tensor& input, const Tensor& upstream, const Tensor& target,
                 const Tensor& analytic, const std::string& what,
                 const GradientCheckOptions& options) {
  Rng rng(options.seed);
  const int64_t n = target.numel();
  const int64_t count = std::min<int64_t>(n, options.samples_per_tensor);
  for (int64_t s = 0; s < count; ++s) {
    const int64_t i = count == n ? s : static_cast<int64_t>(rng.Below(n));
    float* p = target.data() + i;
    const float saved = *p;
    *p = saved + options.step;
    const double plus = Objective(layer, input, upstream);
    *p = saved - options.step;
    const double minus = Objective(layer, input, upstream);
    *p = saved;
    const double numeric = (plus - minus) / (2.0 * options.step);
    const double got = analytic.data()[i];
    EXPECT_LE(std::fabs(got - numeric), options.tolerance * std::max(1.0, std::fabs(numeric)))
        << layer.kind() << " gradient of " << what << "[" << i << "]: backward gives " << got
        << ", finite differences give " << numeric;
  }
}

}  // namespace

void ExpectGradientsMatch(Layer& layer, const Tensor& input, const GradientCheckOptions& options) {
  Tensor probe = layer.Forward(input, /*training=*/true);
  Tensor upstream = RandomTensor(probe.shape(), options.seed + 1);
  layer.Forward(input, /*training=*/true);
  Tensor grad_input = layer.Backward(upstream, options.check_input);
  std::vector<Tensor> param_grads;
  for (Parameter* p : layer.parameters()) param_grads.push_back(p->grad.Clone());
  if (options.check_input) {
    ASSERT_TRUE(grad_input.defined()) << layer.kind() << " returned no input gradient";
    ASSERT_EQ(grad_input.shape(), input.shape());
    CheckTensor(layer, input, upstream, input, grad_input, "input", options);
  }
  auto params = layer.parameters();
  for (size_t k = 0; k < params.size(); ++k) {
    CheckTensor(layer, input, upstream, params[k]->value, param_grads[k], params[k]->name, options);
  }
}

}  // namespace strata::testing
