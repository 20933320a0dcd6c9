// `strata_bench reference`: does Strata compute what the reference
// definition of a model computes? For each config, Strata builds the model,
// runs a training-mode forward of a random batch and a backward of a random
// dL/dlogits (dropout off, so nothing random is left), and writes the
// weights, the batch, the output and every gradient to a tensor file. The
// PyTorch peer (tools/bench/peers/torch_reference.py) builds the same model
// from torchvision.models where torchvision has it (AlexNet, VGG-16,
// ResNet-18/50 at 224x224), else from the config, loads Strata's weights
// (by name, or in order for the config's layers), repeats the computation
// in float32 and in float64, and reports, per tensor, the largest difference
// relative to the tensor's largest magnitude. A model passes when both have
// the same parameter count, the output is within `tolerance`, and every
// gradient is within `tolerance` too; or, where PyTorch's own float32
// gradients stray from float64 by more than `tolerance` (ill-conditioned),
// when Strata's stray from float64 by at most 4x as much.
#ifndef STRATA_TOOLS_BENCH_REFERENCE_CHECK_H_
#define STRATA_TOOLS_BENCH_REFERENCE_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct ReferenceCheckOptions {
  std::vector<std::string> configs;  // job config files
  int64_t batch = 2;
  int threads = 2;
  double tolerance = 1e-4;  // of each tensor's largest magnitude
  std::string python = "/usr/bin/python3";
  std::string json_out;  // the report, when set
};

// Prints one row per model; FailedPrecondition naming every model and
// tensor that differs, FailedPrecondition too when torch is missing.
absl::Status RunReferenceCheck(const ReferenceCheckOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_REFERENCE_CHECK_H_
