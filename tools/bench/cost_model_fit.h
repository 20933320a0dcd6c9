// The cost models `strata_bench train --cost-model-out` fits to what its
// runs measured, for strata_launch --controller changepoint|secbad
// --cost-model: a knob's iteration time against the link rate
// (scheduler/secbad/knob_cost_model.h) with the noise of its readings, or
// batch.shares' from the conv workers' speeds
// (scheduler/secbad/worker_speed_context.h). Each prints what it fitted
// and writes the model's JSON.
#ifndef STRATA_TOOLS_BENCH_COST_MODEL_FIT_H_
#define STRATA_TOOLS_BENCH_COST_MODEL_FIT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/worker_speed_context.h"
#include "tools/bench/harness/report.h"
#include "tools/bench/train_bench.h"
#include "tools/bench/train_contenders.h"

namespace strata::bench {

// The knob's cost model for `mode`, fitted to every knob value's mean
// iteration at every point (each at its link rate, `rates_gbit`), with the
// trace's reading noise and outliers fitted to every run's iterations
// (`link_runs`), printed and written to `path`.
absl::Status WriteCostModel(const BenchReport& report, const std::vector<double>& rates_gbit,
                            const std::vector<TrainContender>& contenders,
                            const std::vector<secbad::LinkRateRun>& link_runs,
                            const std::string& knob, const std::string& mode,
                            const std::string& path);

// batch.shares' cost model for `mode` (scheduler/secbad/worker_speed_context.h),
// fitted to every run's conv worker iterations (by knob value), printed and
// written to `path`.
absl::Status WriteWorkerSpeedModel(
    const std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>>& runs,
    const std::string& mode, int64_t batch, int conv_workers, const std::string& path);

// What the train bench's runs measured for a fit: the conv workers'
// iteration speeds by knob value, and each run's communication times.
struct CostModelInputs {
  std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>> speed_runs;
  std::vector<secbad::LinkRateRun> link_runs;
};

// The model --cost-model-out asks for (`o.cost_model_out`): batch.shares'
// when the knob is batch.shares, else `knob`'s against the link rate of
// each point (the swept bandwidth, or --bandwidth); for the one cluster
// mode of `o.modes`.
absl::Status FitCostModel(const TrainBenchOptions& o, const std::string& knob,
                          const BenchReport& report, const std::vector<TrainContender>& contenders,
                          const CostModelInputs& inputs, int64_t batch);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_COST_MODEL_FIT_H_
