// Single-process training on the StepLoop: the reference that every
// distributed mode must match (same data order, same math), and the
// `single` mode of strata_launch.
#ifndef STRATA_RUNTIME_SINGLE_TRAINER_H_
#define STRATA_RUNTIME_SINGLE_TRAINER_H_

#include "absl/status/statusor.h"
#include "core/model/job_config.h"
#include "core/train/trainer.h"

namespace strata {

// Trains `config` in this process and returns the summary (also written to
// options.summary_out). Errors name what failed (data files, config).
absl::StatusOr<RunSummary> TrainSingle(const JobConfig& config, const RunOptions& options);

}  // namespace strata

#endif  // STRATA_RUNTIME_SINGLE_TRAINER_H_
