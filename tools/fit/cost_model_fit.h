// Fitting a runtime controller's cost model to recorded runs (FitInputs),
// for strata_launch --controller changepoint|secbad --cost-model:
//   batch.shares   the conv workers' speeds
//                  (scheduler/secbad/worker_speed_context.h)
//   any other knob its iteration time against the link rate
//                  (scheduler/secbad/knob_cost_model.h) with the noise and
//                  outliers of its readings (link_rate_context.h)
// Each prints what it fitted and writes the model's JSON.
#ifndef STRATA_TOOLS_FIT_COST_MODEL_FIT_H_
#define STRATA_TOOLS_FIT_COST_MODEL_FIT_H_

#include <string>

#include "absl/status/status.h"
#include "tools/fit/fit_inputs.h"

namespace strata::fit {

// The model of `inputs.knob` (as above), printed and written to `path`.
// The fitters' errors (too few samples, rates that cannot be told apart)
// come back as they are.
absl::Status FitAndWriteCostModel(const FitInputs& inputs, const std::string& path);

}  // namespace strata::fit

#endif  // STRATA_TOOLS_FIT_COST_MODEL_FIT_H_
