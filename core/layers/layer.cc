#include "core/layers/layer.h"

namespace strata {

Parameter ZeroParameter(std::string name, const Shape& shape) {
  Parameter p;
  p.name = std::move(name);
  p.value = Tensor::Zeros(shape);
  p.grad = Tensor::Zeros(shape);
  return p;
}

void FillUniform(Tensor& t, Rng& rng, float bound) {
  float* v = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = rng.Uniform(-bound, bound);
}

Shape Layer::BatchShape(int64_t n, const Shape& per_sample) const {
  std::vector<int64_t> dims;
  dims.reserve(per_sample.rank() + 1);
  dims.push_back(n);
  for (int64_t d : per_sample.dims()) dims.push_back(d);
  return Shape(std::move(dims));
}

}  // namespace strata
