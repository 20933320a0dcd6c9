#include "core/layers/layer.h"

namespace strata {

Shape Layer::BatchShape(int64_t n, const Shape& per_sample) const {
  std::vector<int64_t> dims;
  dims.reserve(per_sample.rank() + 1);
  dims.push_back(n);
  for (int64_t d : per_sample.dims()) dims.push_back(d);
  return Shape(std::move(dims));
}

}  // namespace strata
