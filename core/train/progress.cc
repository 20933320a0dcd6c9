#include "core/train/progress.h"

#include "absl/strings/str_format.h"
#include "core/util/clock.h"

namespace strata {
ProgressReporter::ProgressReporter(FILE* stream, std::string prefix, int64_t plain_every)
    : line_(stream), prefix_(std::move(prefix)), plain_every_(plain_every < 1 ? 1 : plain_every) {}

std::string ProgressReporter::Format(const ProgressState& s) {
  const double remaining = static_cast<double>(s.total_steps - s.steps_done) * s.seconds_per_step;
  const int64_t eta = remaining > 0 ? static_cast<int64_t>(remaining + 0.5) : 0;
  return absl::StrFormat("epoch %d/%d  step %d/%d  loss %.4f  %.0f img/s  ETA %d:%02d", s.epoch,
                         s.epochs, s.step_in_epoch, s.steps_per_epoch, s.loss, s.images_per_sec,
                         eta / 60, eta % 60);
}

void ProgressReporter::Update(const ProgressState& state) {
  const bool last = state.steps_done == state.total_steps;
  if (line_.terminal()) {
    const double now = MonotonicSeconds();
    if (!last && now - last_draw_ < 0.1) return;
    last_draw_ = now;
    line_.Show(prefix_ + Format(state));
  } else if (state.steps_done % plain_every_ == 0 || last) {
    line_.Print(prefix_ + Format(state));
  }
}

void ProgressReporter::Finish() { line_.Finish(); }

void ProgressReporter::Message(const std::string& text) { line_.Print(prefix_ + text); }

}  // namespace strata
