// ProgressReporter: the live progress line of a training run, on a
// LiveLine (core/util/live_line.h). On a terminal the line is redrawn at
// most every 100 ms:
//   epoch 1/3  step 412/937  loss 0.4213  2913 img/s  ETA 0:42
// When the stream is not a terminal (a log file, CI) the same text is
// printed as a plain line every `plain_every` steps instead.
#ifndef STRATA_CORE_TRAIN_PROGRESS_H_
#define STRATA_CORE_TRAIN_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/util/live_line.h"

namespace strata {

struct ProgressState {
  int64_t epoch = 0;  // 1-based
  int64_t epochs = 0;
  int64_t step_in_epoch = 0;  // 1-based
  int64_t steps_per_epoch = 0;
  int64_t steps_done = 0;  // over the whole run
  int64_t total_steps = 0;
  double loss = 0.0;
  double images_per_sec = 0.0;
  double seconds_per_step = 0.0;
};

class ProgressReporter {
 public:
  // `prefix` starts every line ("[single] "); `plain_every` >= 1.
  ProgressReporter(FILE* stream, std::string prefix, int64_t plain_every);
  void Update(const ProgressState& state);
  // Ends the in-place line (if any) so the next output starts on a new line.
  void Finish();
  // Prints a message on its own line without disturbing the progress line.
  void Message(const std::string& text);

  static std::string Format(const ProgressState& state);

 private:
  LiveLine line_;
  std::string prefix_;
  int64_t plain_every_;
  double last_draw_ = 0.0;
};

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_PROGRESS_H_
