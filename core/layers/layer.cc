#include "core/layers/layer.h"

#include "core/ops/backend.h"
#include "core/status.h"

namespace strata {

Parameter ZeroParameter(std::string name, const Shape& shape, const Backend& backend) {
  Parameter p;
  p.name = std::move(name);
  p.value = backend.Zeros(shape);
  p.grad = backend.Zeros(shape);
  return p;
}

void FillUniform(Tensor& t, Rng& rng, float bound) {
  Tensor host = t.device() == Device::kCpu ? t : Tensor::Empty(t.shape());
  float* v = host.data();
  for (int64_t i = 0; i < host.numel(); ++i) v[i] = rng.Uniform(-bound, bound);
  if (t.device() == Device::kCpu) return;
  const Backend& backend = **BackendRegistry::Global().ForDevice(t.device());
  Tensor uploaded = *backend.Upload(host);
  STRATA_CHECK_OK(backend.Copy(uploaded, t));
}

Shape Layer::BatchShape(int64_t n, const Shape& per_sample) const {
  std::vector<int64_t> dims;
  dims.reserve(per_sample.rank() + 1);
  dims.push_back(n);
  for (int64_t d : per_sample.dims()) dims.push_back(d);
  return Shape(std::move(dims));
}

}  // namespace strata
