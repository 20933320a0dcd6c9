// Calibration for `strata_bench plan`: each layer of a model timed, forward
// and backward, on this machine at a given batch and thread count, and the
// per-sample costs of the trunk and the head that follow.
#ifndef STRATA_TOOLS_BENCH_LAYER_TIMING_H_
#define STRATA_TOOLS_BENCH_LAYER_TIMING_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model.h"
#include "tools/bench/traffic_plan.h"

namespace strata::bench {

struct LayerTiming {
  std::string name;
  std::string kind;
  double forward_seconds = 0;   // per sample, median of the repeats
  double backward_seconds = 0;  // per sample (input and weight gradients)
  bool in_trunk = true;
};

struct LayerCalibration {
  std::vector<LayerTiming> layers;
  ComputeCosts costs;  // sums over the trunk's and the head's layers
};

// Times every top-level layer of `model` over `repeats` training steps
// (after one warm-up) of a random batch of `batch` samples with `threads`
// CPU threads. The first layer's backward computes no input gradient, as
// in training.
absl::StatusOr<LayerCalibration> CalibrateLayers(Model& model, int64_t batch, int threads,
                                                 int repeats = 3);

// Seconds per sample of the head's layers (those after the split), forward
// and backward, timed the same way on random activations of `batch`
// samples.
absl::StatusOr<double> CalibrateHead(Model& model, int64_t batch, int threads, int repeats = 3);

// What the plan of `shape` needs: the layers at a conv worker's batch with
// `shape.threads` threads, and the head again at a stanza FC worker's batch
// (costs.fc_head_seconds) where that differs.
absl::StatusOr<LayerCalibration> CalibrateForShape(Model& model, const ClusterShape& shape);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_LAYER_TIMING_H_
