// What the options of `strata_bench train` mean before anything runs: the
// sweep they ask for, their contradictions, and the conditions at each of
// the sweep's points.
#ifndef STRATA_TOOLS_BENCH_TRAIN_OPTIONS_H_
#define STRATA_TOOLS_BENCH_TRAIN_OPTIONS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/train_bench.h"
#include "tools/bench/train_contenders.h"

namespace strata::bench {

struct Sweep {
  std::string parameter;  // "" = no sweep
  std::vector<std::string> values;
};

// --sweep NAME=V1,V2 (bandwidth, latency or cpu); no sweep when empty.
absl::StatusOr<Sweep> ParseSweep(const TrainBenchOptions& o);

// The modes of --modes other than single (the ones that start a cluster).
std::vector<std::string> ClusterModesOf(const TrainBenchOptions& o);

// What the runs record for a cost model (the report's "fit_inputs",
// tools/fit): with --knob and one cluster mode, batch.shares' conv worker
// speeds or any other knob's link readings; nothing otherwise.
RecordsWanted RecordsWantedBy(const TrainBenchOptions& o);

// The options' contradictions, before anything runs.
absl::Status CheckOptions(const TrainBenchOptions& o, const Sweep& sweep);

// The conditions of the point `value` of `sweep` ("" = the options' own).
NetworkSetting SettingAt(const TrainBenchOptions& o, const Sweep& sweep, const std::string& value);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_OPTIONS_H_
