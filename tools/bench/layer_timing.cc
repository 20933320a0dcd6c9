#include "tools/bench/layer_timing.h"

#include "absl/strings/str_format.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/statistics.h"

namespace strata::bench {
namespace {

// Times layers [first, num_layers) on a random `batch` of inputs of shape
// `sample` (layer first's input, per sample).
std::vector<LayerTiming> TimeLayers(Model& model, int first, const Shape& sample, int64_t batch,
                                    int repeats) {
  const int layers = model.num_layers();
  std::vector<int64_t> dims = {batch};
  for (int64_t d : sample.dims()) dims.push_back(d);
  Rng rng(7);
  Tensor input = Tensor::Empty(Shape(dims));
  FillUniform(input, rng, 1.0f);

  std::vector<std::vector<double>> forward(layers), backward(layers);
  for (int r = 0; r <= repeats; ++r) {  // r = 0 warms up (kernels, memory)
    Tensor x = input;
    for (int i = first; i < layers; ++i) {
      const double start = MonotonicSeconds();
      x = model.layer(i).Forward(x, /*training=*/true);
      if (r > 0) forward[i].push_back(MonotonicSeconds() - start);
    }
    Tensor g = Tensor::Empty(x.shape());
    g.Fill(1.0f / static_cast<float>(g.numel()));
    for (int i = layers - 1; i >= first; --i) {
      const double start = MonotonicSeconds();
      g = model.layer(i).Backward(g, /*need_input_grad=*/i > 0);
      if (r > 0) backward[i].push_back(MonotonicSeconds() - start);
    }
  }
  std::vector<LayerTiming> out;
  const double per_sample = 1.0 / static_cast<double>(batch);
  for (int i = first; i < layers; ++i) {
    LayerTiming t;
    t.name = model.layer(i).name();
    t.kind = model.layer(i).kind();
    t.forward_seconds = Median(forward[i]) * per_sample;
    t.backward_seconds = Median(backward[i]) * per_sample;
    t.in_trunk = i < model.split_index();
    out.push_back(t);
  }
  return out;
}

absl::Status CheckArguments(int64_t batch, int repeats) {
  if (batch < 1 || repeats < 1) {
    return absl::InvalidArgumentError("calibration needs a batch and repeats >= 1");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LayerCalibration> CalibrateLayers(Model& model, int64_t batch, int threads,
                                                 int repeats) {
  STRATA_RETURN_IF_ERROR(CheckArguments(batch, repeats));
  SetCpuThreads(threads);
  LayerCalibration c;
  c.layers = TimeLayers(model, 0, model.input_shape(), batch, repeats);
  for (const LayerTiming& t : c.layers) {
    (t.in_trunk ? c.costs.trunk_seconds : c.costs.head_seconds) +=
        t.forward_seconds + t.backward_seconds;
    c.costs.layer_forward_seconds.push_back(t.forward_seconds);
    c.costs.layer_backward_seconds.push_back(t.backward_seconds);
  }
  c.costs.source = absl::StrFormat("layers timed at batch %lld with %d thread%s",
                                   static_cast<long long>(batch), threads, threads == 1 ? "" : "s");
  return c;
}

absl::StatusOr<double> CalibrateHead(Model& model, int64_t batch, int threads, int repeats) {
  STRATA_RETURN_IF_ERROR(CheckArguments(batch, repeats));
  SetCpuThreads(threads);
  double seconds = 0;
  for (const LayerTiming& t :
       TimeLayers(model, model.split_index(), model.boundary_shape(), batch, repeats)) {
    seconds += t.forward_seconds + t.backward_seconds;
  }
  return seconds;
}

absl::StatusOr<LayerCalibration> CalibrateForShape(Model& model, const ClusterShape& shape) {
  if (shape.conv_workers < 1 || shape.fc_workers < 1 ||
      shape.global_batch % shape.conv_workers != 0) {
    return absl::InvalidArgumentError(
        "calibration: the global batch must divide over the conv workers");
  }
  const int64_t per_worker = shape.global_batch / shape.conv_workers;
  STRATA_ASSIGN_OR_RETURN(LayerCalibration c, CalibrateLayers(model, per_worker, shape.threads));
  const int64_t fc_batch = shape.global_batch / shape.fc_workers;
  if (fc_batch != per_worker && model.split_index() < model.num_layers()) {
    STRATA_ASSIGN_OR_RETURN(c.costs.fc_head_seconds, CalibrateHead(model, fc_batch, shape.threads));
    c.costs.source +=
        absl::StrFormat(", the FC worker's head at batch %lld", static_cast<long long>(fc_batch));
  }
  return c;
}

}  // namespace strata::bench
