#include "tools/bench/progress_bar.h"

#include <unistd.h>

#include <cstdio>

#include "core/util/clock.h"

namespace strata::bench {

ProgressBar::ProgressBar(int total_runs)
    : total_(total_runs), terminal_(::isatty(STDOUT_FILENO) == 1) {
  if (!terminal_) return;
  redraw_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      auto stopped = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stopped), absl::Milliseconds(500))) break;
      if (!run_.empty()) Draw();
    }
  });
}

ProgressBar::~ProgressBar() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (redraw_.joinable()) redraw_.join();
}

void ProgressBar::Draw() {
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? kWidth * done_ / total_ : 0;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::printf("\r\033[K[%s] %d/%d %s  %.0fs", bar.c_str(), done_ + 1, total_, run_.c_str(),
              MonotonicSeconds() - started_);
  std::fflush(stdout);
}

void ProgressBar::Begin(const std::string& run) {
  absl::MutexLock lock(&mu_);
  run_ = run;
  started_ = MonotonicSeconds();
  if (terminal_) Draw();
}

void ProgressBar::End(const std::string& result) {
  absl::MutexLock lock(&mu_);
  if (terminal_) std::printf("\r\033[K");
  std::printf("[%d/%d] %-28s %s\n", done_ + 1, total_, run_.c_str(), result.c_str());
  std::fflush(stdout);
  ++done_;
  run_.clear();
}

}  // namespace strata::bench
