#include "tools/bench/harness/progress_bar.h"

#include "absl/strings/str_format.h"
#include "core/util/clock.h"

namespace strata::bench {

ProgressBar::ProgressBar(int total_runs) : total_(total_runs), line_(stdout) {
  if (!line_.terminal()) return;
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
  line_.Show(absl::StrFormat("[%s] %d/%d %s  %.0fs", bar, done_ + 1, total_, run_,
                             MonotonicSeconds() - started_));
}

void ProgressBar::Begin(const std::string& run) {
  absl::MutexLock lock(&mu_);
  run_ = run;
  started_ = MonotonicSeconds();
  if (line_.terminal()) Draw();
}

void ProgressBar::End(const std::string& result) {
  absl::MutexLock lock(&mu_);
  line_.Print(absl::StrFormat("[%d/%d] %-28s %s", done_ + 1, total_, run_, result));
  ++done_;
  run_.clear();
}

}  // namespace strata::bench
