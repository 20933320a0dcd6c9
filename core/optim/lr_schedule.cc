#include "core/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace strata {

absl::Status ValidateLrSchedule(const LrScheduleConfig& c) {
  if (c.type != "constant" && c.type != "step" && c.type != "cosine") {
    return absl::InvalidArgumentError(absl::StrCat("schedule.type: unknown schedule \"", c.type,
                                                   "\" (use constant, step or cosine)"));
  }
  if (c.warmup_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.warmup_steps must be >= 0, got ", c.warmup_steps));
  }
  if (c.type == "step" && c.step_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule.step_size must be > 0 for a step schedule, got ", c.step_size));
  }
  if (!(c.gamma > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("schedule.gamma must be > 0, got ", c.gamma));
  }
  if (!(c.min_lr >= 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("schedule.min_lr must be >= 0, got ", c.min_lr));
  }
  return absl::OkStatus();
}

LrSchedule::LrSchedule(LrScheduleConfig config, float base_lr, int64_t total_steps)
    : config_(std::move(config)), base_lr_(base_lr), total_steps_(total_steps) {}

float LrSchedule::At(int64_t step) const {
  if (step < config_.warmup_steps) {
    return base_lr_ * static_cast<float>(step + 1) / static_cast<float>(config_.warmup_steps);
  }
  const int64_t t = step - config_.warmup_steps;
  if (config_.type == "step") {
    return base_lr_ * std::pow(config_.gamma, static_cast<float>(t / config_.step_size));
  }
  if (config_.type == "cosine") {
    const int64_t span = std::max<int64_t>(1, total_steps_ - config_.warmup_steps);
    const double progress = std::min(1.0, static_cast<double>(t) / static_cast<double>(span));
    const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
    return static_cast<float>(config_.min_lr + (base_lr_ - config_.min_lr) * cosine);
  }
  return base_lr_;
}

}  // namespace strata
