// FitInputs: what a runtime controller's cost model is fitted to, the runs
// of one job at each value of one knob, as `strata_bench train --knob`
// records them in its report ("fit_inputs") and strata_fit reads them back.
//
//   {"knob": "wire.format", "mode": "ps", "batch": 64, "conv_workers": 2,
//    "cost_samples": [{"value", "rate_gbit", "local_seconds",
//                      "communication_seconds"}, ...],
//    "link_runs": [{"value", "communication_seconds": [...]}, ...],
//    "speed_runs": {"1,1": [[{"compute_seconds": [...], "rows": [...],
//                             "wall_seconds"}, ...], ...], ...}}
#ifndef STRATA_TOOLS_FIT_FIT_INPUTS_H_
#define STRATA_TOOLS_FIT_FIT_INPUTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "scheduler/secbad/knob_cost_model.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/worker_speed_context.h"

namespace strata::fit {

struct FitInputs {
  std::string knob;  // "wire.format", "batch.shares", ...
  std::string mode;  // the cluster mode the runs trained in: "ps", "stanza"
  int64_t batch = 0;
  int conv_workers = 0;
  // A link-rate knob's: each value's mean iteration at each link rate it
  // ran at, and every run's iterations' communication times.
  std::vector<secbad::CostSample> cost_samples;
  std::vector<secbad::LinkRateRun> link_runs;
  // batch.shares': by value, every run's iterations (start-up left out).
  std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>> speed_runs;

  nlohmann::json ToJson() const;
  // InvalidArgument naming the first field that is missing or of another
  // type.
  static absl::StatusOr<FitInputs> FromJson(const nlohmann::json& json);
};

}  // namespace strata::fit

#endif  // STRATA_TOOLS_FIT_FIT_INPUTS_H_
