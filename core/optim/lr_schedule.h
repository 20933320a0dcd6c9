// Learning-rate schedules: constant, step decay and cosine, each with an
// optional linear warm-up.
//
//   LrSchedule s({.type = "cosine", .warmup_steps = 100}, /*base_lr=*/0.1, /*total_steps=*/1000);
//   float lr = s.At(step);   // step counts from 0
#ifndef STRATA_CORE_OPTIM_LR_SCHEDULE_H_
#define STRATA_CORE_OPTIM_LR_SCHEDULE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace strata {

struct LrScheduleConfig {
  std::string type = "constant";  // "constant", "step" or "cosine"
  int64_t warmup_steps = 0;       // linear ramp from base_lr/warmup_steps to base_lr
  int64_t step_size = 0;          // step: multiply by gamma every step_size steps
  float gamma = 0.1f;
  float min_lr = 0.0f;  // cosine: the value reached at total_steps
};

// Fails with InvalidArgument naming the field that is wrong.
absl::Status ValidateLrSchedule(const LrScheduleConfig& config);

class LrSchedule {
 public:
  // `total_steps` is the length of training (cosine decays over the steps
  // after warm-up). `config` must have passed ValidateLrSchedule.
  LrSchedule(LrScheduleConfig config, float base_lr, int64_t total_steps);
  // Learning rate for the 0-based `step`.
  float At(int64_t step) const;

 private:
  LrScheduleConfig config_;
  float base_lr_;
  int64_t total_steps_;
};

}  // namespace strata

#endif  // STRATA_CORE_OPTIM_LR_SCHEDULE_H_
