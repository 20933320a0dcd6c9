#include "tools/bench/layer_timing.h"

#include "absl/strings/str_format.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/statistics.h"

namespace strata::bench {
absl::StatusOr<LayerCalibration> CalibrateLayers(Model& model, int64_t batch, int threads,
                                                 int repeats) {
  if (batch < 1 || repeats < 1) {
    return absl::InvalidArgumentError("calibration needs a batch and repeats >= 1");
  }
  SetCpuThreads(threads);
  const int layers = model.num_layers();
  std::vector<int64_t> dims = {batch};
  for (int64_t d : model.input_shape().dims()) dims.push_back(d);
  Rng rng(7);
  Tensor input = Tensor::Empty(Shape(dims));
  FillUniform(input, rng, 1.0f);

  std::vector<std::vector<double>> forward(layers), backward(layers);
  for (int r = 0; r <= repeats; ++r) {  // r = 0 warms up (kernels, memory)
    Tensor x = input;
    for (int i = 0; i < layers; ++i) {
      const double start = MonotonicSeconds();
      x = model.layer(i).Forward(x, /*training=*/true);
      if (r > 0) forward[i].push_back(MonotonicSeconds() - start);
    }
    Tensor g = Tensor::Empty(x.shape());
    g.Fill(1.0f / static_cast<float>(g.numel()));
    for (int i = layers - 1; i >= 0; --i) {
      const double start = MonotonicSeconds();
      g = model.layer(i).Backward(g, /*need_input_grad=*/i > 0);
      if (r > 0) backward[i].push_back(MonotonicSeconds() - start);
    }
  }
  LayerCalibration c;
  const double per_sample = 1.0 / static_cast<double>(batch);
  for (int i = 0; i < layers; ++i) {
    LayerTiming t;
    t.name = model.layer(i).name();
    t.kind = model.layer(i).kind();
    t.forward_seconds = Median(forward[i]) * per_sample;
    t.backward_seconds = Median(backward[i]) * per_sample;
    t.in_trunk = i < model.split_index();
    (t.in_trunk ? c.costs.trunk_seconds : c.costs.head_seconds) +=
        t.forward_seconds + t.backward_seconds;
    c.layers.push_back(t);
  }
  c.costs.source = absl::StrFormat("layers timed at batch %lld with %d thread%s",
                                   static_cast<long long>(batch), threads, threads == 1 ? "" : "s");
  return c;
}

}  // namespace strata::bench
