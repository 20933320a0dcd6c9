// TrainingReporter: the bookkeeping every training loop shares — the
// progress line, metrics lines, the mean loss of the epoch and of the
// logging window, throughput, and the run summary's training fields.
//
//   TrainingReporter reporter(config.training, total_steps, steps_per_epoch,
//                             "[single] ", show_progress, &metrics);
//   ... one step ... reporter.StepDone(step, loss, seconds, lr);
//   if (reporter.EpochEnds(step + 1)) reporter.Evaluated(step + 1, eval);
//   reporter.Finish(&summary);
#ifndef STRATA_CORE_TRAIN_TRAINING_REPORTER_H_
#define STRATA_CORE_TRAIN_TRAINING_REPORTER_H_

#include <cstdint>
#include <string>

#include "core/model/job_config.h"
#include "core/train/metrics_writer.h"
#include "core/train/progress.h"
#include "core/train/trainer.h"

namespace strata {

class TrainingReporter {
 public:
  // `metrics` may be null; it must outlive the reporter. Steps count global
  // batches of training.batch_size images.
  TrainingReporter(const TrainingConfig& training, int64_t total_steps, int64_t steps_per_epoch,
                   std::string prefix, bool show_progress, MetricsWriter* metrics);

  // Records finished step `step` (0-based, global) that took `seconds` of
  // training time; `lr` < 0 leaves the learning rate out of the metrics.
  void StepDone(int64_t step, double loss, double seconds, double lr = -1.0);
  // True when `steps_done` ends an epoch or the run.
  bool EpochEnds(int64_t steps_done) const;
  // Records a test-set evaluation after `steps_done` steps.
  void Evaluated(int64_t steps_done, const EvalResult& eval);
  // Ends the progress line and fills the summary's training fields (steps,
  // epochs, train_loss, train_seconds, images_per_sec, test results).
  void Finish(int64_t steps_done, RunSummary* summary);

  int64_t epochs() const { return epochs_; }

 private:
  const TrainingConfig& training_;
  int64_t total_steps_;
  int64_t steps_per_epoch_;
  int64_t epochs_;
  bool show_;
  MetricsWriter* metrics_;
  ProgressReporter progress_;
  double train_seconds_ = 0.0;
  int64_t steps_run_ = 0;
  double epoch_loss_ = 0.0;
  int64_t epoch_steps_ = 0;
  double window_loss_ = 0.0;
  int64_t window_steps_ = 0;
  EvalResult last_eval_;
  bool evaluated_ = false;
};

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_TRAINING_REPORTER_H_
