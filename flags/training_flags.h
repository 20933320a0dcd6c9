// The command-line flags that override a job config's training length and
// batch, shared by every binary that trains or serves a job (so a cluster's
// processes agree): --epochs, --max-steps, --batch-size, --seed.
#ifndef STRATA_FLAGS_TRAINING_FLAGS_H_
#define STRATA_FLAGS_TRAINING_FLAGS_H_

#include <string>
#include <vector>

#include "core/model/job_config.h"

namespace strata {

// Applies the flags that were given (> 0, or >= 0 for the seed) to `training`.
void ApplyTrainingFlags(TrainingConfig* training);

// The same overrides as command-line arguments, for starting other processes.
std::vector<std::string> TrainingFlagArgs(const TrainingConfig& training);

}  // namespace strata

#endif  // STRATA_FLAGS_TRAINING_FLAGS_H_
