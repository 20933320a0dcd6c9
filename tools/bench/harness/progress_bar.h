// ProgressBar: shows how far a long benchmark is, on a LiveLine
// (core/util/live_line.h). On a terminal it redraws one line twice a second
// ("[#####.....] 3/12 strata ps @ 1gbit  41s"); everywhere it prints one
// line per finished run.
#ifndef STRATA_TOOLS_BENCH_HARNESS_PROGRESS_BAR_H_
#define STRATA_TOOLS_BENCH_HARNESS_PROGRESS_BAR_H_

#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "core/util/live_line.h"

namespace strata::bench {

class ProgressBar {
 public:
  explicit ProgressBar(int total_runs);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // A run starts / ends; `result` is printed with the run's name.
  void Begin(const std::string& run);
  void End(const std::string& result);

 private:
  void Draw() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int total_;
  absl::Mutex mu_;
  LiveLine line_ ABSL_GUARDED_BY(mu_);
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  std::string run_ ABSL_GUARDED_BY(mu_);
  double started_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread redraw_;
};

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_PROGRESS_BAR_H_
