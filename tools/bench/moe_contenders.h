// The contenders of `strata_bench moe` other than Strata's own layer: the
// PyTorch peers (tools/bench/peers/torch_moe.py) with GShard's dense einsum
// dispatch or an index-based sparse one, run as processes of their own on
// the inputs Strata's layer computes on, and how their results are
// compared with the layer's.
#ifndef STRATA_TOOLS_BENCH_MOE_CONTENDERS_H_
#define STRATA_TOOLS_BENCH_MOE_CONTENDERS_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"
#include "moe/moe_layer.h"
#include "tools/bench/moe_bench.h"

namespace strata::bench {

// What a contender computed on the shared inputs: the layer's output and
// the gradient of its input.
struct LayerResult {
  Tensor y, grad_x;
};

// The layer's input and parameters as float32, in the order the peer reads
// them, at `path`.
absl::Status WriteInputs(const std::string& path, const Tensor& x, moe::MoeLayer& layer);

struct PeerRun {
  double seconds = 0;  // the median of `repeat` timed forward + backward steps
  LayerResult result;  // when asked for
};

// One run of the PyTorch peer with `dispatch` ("einsum", "sparse") on the
// inputs WriteInputs wrote, `repeat` timed steps after one warm-up; its
// files and log in `scratch`.
absl::StatusOr<PeerRun> RunPeer(const MoeBenchOptions& o, const std::string& dispatch,
                                const std::string& inputs, const std::string& scratch, int repeat,
                                bool with_result);

// Largest |a - b| over the largest |a|: float32 sums in another order
// stay far below kMoeTolerance; a different routing or formula does not.
double RelativeDifference(const Tensor& a, const Tensor& b);
inline constexpr double kMoeTolerance = 1e-4;

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_MOE_CONTENDERS_H_
