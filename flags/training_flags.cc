#include "flags/training_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(int64_t, epochs, 0, "epochs (overrides training.epochs)");
ABSL_FLAG(int64_t, max_steps, 0, "stop after this many steps (overrides training.max_steps)");
ABSL_FLAG(int64_t, batch_size, 0, "global batch size (overrides training.batch_size)");
ABSL_FLAG(int64_t, seed, -1, "random seed (overrides training.seed)");

namespace strata {

void ApplyTrainingFlags(TrainingConfig* training) {
  if (absl::GetFlag(FLAGS_epochs) > 0) training->epochs = absl::GetFlag(FLAGS_epochs);
  if (absl::GetFlag(FLAGS_max_steps) > 0) training->max_steps = absl::GetFlag(FLAGS_max_steps);
  if (absl::GetFlag(FLAGS_batch_size) > 0) training->batch_size = absl::GetFlag(FLAGS_batch_size);
  if (absl::GetFlag(FLAGS_seed) >= 0) training->seed = absl::GetFlag(FLAGS_seed);
}

std::vector<std::string> TrainingFlagArgs(const TrainingConfig& training) {
  return {"--epochs",     std::to_string(training.epochs),
          "--max-steps",  std::to_string(training.max_steps),
          "--batch-size", std::to_string(training.batch_size),
          "--seed",       std::to_string(training.seed)};
}

}  // namespace strata
