// `strata_bench train --models a,b,...`: the paper's table in kind. Runs the
// train benchmark (its contenders alternated, its peers checked) on each
// model's config in turn, then prints one row per model: the share of the
// parameters in the FC head, the bytes per iteration of ps and stanza, the
// images/s of every contender, stanza's speed-up over ps and DDP, and
// beside each the speed-up `strata_bench plan` predicts for the same shape
// (its layers calibrated on this machine at a conv worker's batch and
// thread count).
#ifndef STRATA_TOOLS_BENCH_MODEL_TABLE_H_
#define STRATA_TOOLS_BENCH_MODEL_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/train_bench.h"

namespace strata::bench {

// `models`: config files, or names of the project's configs ("alexnet" is
// configs/alexnet.json). `base` sets everything else (modes, cluster,
// network, steps); its config and JSON output are ignored, and `json_out`
// gets the table and every model's report.
absl::Status RunModelTable(const TrainBenchOptions& base, const std::vector<std::string>& models,
                           const std::string& json_out);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_MODEL_TABLE_H_
