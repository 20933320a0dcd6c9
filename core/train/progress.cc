#include "core/train/progress.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_format.h"
#include "core/util/clock.h"

namespace strata {
ProgressReporter::ProgressReporter(FILE* stream, std::string prefix, int64_t plain_every)
    : stream_(stream),
      prefix_(std::move(prefix)),
      plain_every_(plain_every < 1 ? 1 : plain_every),
      is_tty_(isatty(fileno(stream)) != 0) {}

std::string ProgressReporter::Format(const ProgressState& s) {
  const double remaining = static_cast<double>(s.total_steps - s.steps_done) * s.seconds_per_step;
  const int64_t eta = remaining > 0 ? static_cast<int64_t>(remaining + 0.5) : 0;
  return absl::StrFormat("epoch %d/%d  step %d/%d  loss %.4f  %.0f img/s  ETA %d:%02d", s.epoch,
                         s.epochs, s.step_in_epoch, s.steps_per_epoch, s.loss, s.images_per_sec,
                         eta / 60, eta % 60);
}

void ProgressReporter::Update(const ProgressState& state) {
  if (is_tty_) {
    const double now = MonotonicSeconds();
    const bool last = state.steps_done == state.total_steps;
    if (!last && now - last_draw_ < 0.1) return;
    last_draw_ = now;
    std::fprintf(stream_, "\r\033[K%s%s", prefix_.c_str(), Format(state).c_str());
    line_open_ = true;
  } else if (state.steps_done % plain_every_ == 0 || state.steps_done == state.total_steps) {
    std::fprintf(stream_, "%s%s\n", prefix_.c_str(), Format(state).c_str());
  }
  std::fflush(stream_);
}

void ProgressReporter::Finish() {
  if (line_open_) std::fputc('\n', stream_);
  line_open_ = false;
  std::fflush(stream_);
}

void ProgressReporter::Message(const std::string& text) {
  Finish();
  std::fprintf(stream_, "%s%s\n", prefix_.c_str(), text.c_str());
  std::fflush(stream_);
}

}  // namespace strata
