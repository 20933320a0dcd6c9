// What `strata_bench train` prints and reports beside the runner's tables:
// the setting, the facts its JSON starts from, what each point comes to
// (the ratios that matter, the best static knob value), and what a cost
// model is fitted to.
#ifndef STRATA_TOOLS_BENCH_TRAIN_SUMMARY_H_
#define STRATA_TOOLS_BENCH_TRAIN_SUMMARY_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/bench/harness/report.h"
#include "tools/bench/train_bench.h"
#include "tools/bench/train_contenders.h"
#include "tools/bench/train_options.h"
#include "tools/fit/fit_inputs.h"

namespace strata::bench {

// The run's setting, before anything runs.
void PrintSetting(const TrainBenchOptions& o, const Sweep& sweep, int64_t batch);

// What the report's JSON starts from: the job, the cluster, the machine.
nlohmann::json FactsOf(const TrainBenchOptions& o, int64_t batch, double gflops,
                       double train_flops);

// Ratios that matter: every Strata mode against every peer, and stanza
// against ps.
void PrintRatios(const SweepPoint& p, nlohmann::json& point_json);

// Per cluster mode, the knob value whose run was fastest (by median) at
// `point`, printed with its lead over the slowest value; returned as
// {mode: {"value", "images_per_sec", "over_slowest"}}.
nlohmann::json PrintBestStatic(const SweepPoint& point,
                               const std::vector<TrainContender>& contenders,
                               const std::string& knob, const std::vector<std::string>& modes);

// What a cost model of the run's knob is fitted to (tools/fit): the
// `recorded` runs, and each knob value's mean iteration at every point of
// `report` at the point's link rate (the swept bandwidth, or --bandwidth;
// 0 when neither), for the one cluster mode of `o.modes`.
fit::FitInputs FitInputsOf(const TrainBenchOptions& o, const std::string& knob, int64_t batch,
                           const BenchReport& report, const std::vector<TrainContender>& contenders,
                           fit::FitInputs recorded);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_SUMMARY_H_
