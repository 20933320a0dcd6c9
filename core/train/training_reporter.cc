#include "core/train/training_reporter.h"

#include "absl/strings/str_format.h"

namespace strata {

TrainingReporter::TrainingReporter(const TrainingConfig& training, int64_t total_steps,
                                   int64_t steps_per_epoch, std::string prefix, bool show_progress,
                                   MetricsWriter* metrics)
    : training_(training),
      total_steps_(total_steps),
      steps_per_epoch_(steps_per_epoch),
      epochs_((total_steps + steps_per_epoch - 1) / steps_per_epoch),
      show_(show_progress),
      metrics_(metrics),
      progress_(stderr, std::move(prefix), training.log_every) {}

void TrainingReporter::StepDone(int64_t step, double loss, double seconds, double lr) {
  if (step % steps_per_epoch_ == 0 || epoch_steps_ == 0) {
    epoch_loss_ = 0.0;
    epoch_steps_ = 0;
  }
  train_seconds_ += seconds;
  ++steps_run_;
  epoch_loss_ += loss;
  ++epoch_steps_;
  window_loss_ += loss;
  ++window_steps_;
  const int64_t done = step + 1;
  ProgressState ps;
  ps.epoch = step / steps_per_epoch_ + 1;
  ps.epochs = epochs_;
  ps.step_in_epoch = step % steps_per_epoch_ + 1;
  ps.steps_per_epoch = steps_per_epoch_;
  ps.steps_done = done;
  ps.total_steps = total_steps_;
  ps.loss = loss;
  ps.images_per_sec =
      static_cast<double>(steps_run_ * training_.batch_size) / std::max(train_seconds_, 1e-9);
  ps.seconds_per_step = train_seconds_ / static_cast<double>(steps_run_);
  if (show_) progress_.Update(ps);
  if (metrics_ != nullptr && (done % training_.log_every == 0 || done == total_steps_)) {
    nlohmann::json record = {{"event", "train"},
                             {"epoch", ps.epoch},
                             {"step", done},
                             {"loss", window_loss_ / static_cast<double>(window_steps_)},
                             {"images_per_sec", ps.images_per_sec}};
    if (lr >= 0) record["lr"] = lr;
    metrics_->Write(record);
    window_loss_ = 0.0;
    window_steps_ = 0;
  }
}

bool TrainingReporter::EpochEnds(int64_t steps_done) const {
  return steps_done % steps_per_epoch_ == 0 || steps_done == total_steps_;
}

void TrainingReporter::Evaluated(int64_t steps_done, const EvalResult& eval) {
  last_eval_ = eval;
  evaluated_ = true;
  const int64_t epoch = (steps_done - 1) / steps_per_epoch_ + 1;
  if (metrics_ != nullptr) {
    metrics_->Write({{"event", "eval"},
                     {"epoch", epoch},
                     {"step", steps_done},
                     {"test_accuracy", eval.accuracy},
                     {"test_loss", eval.loss}});
  }
  if (show_) {
    progress_.Message(absl::StrFormat("epoch %d: test_accuracy=%.4f test_loss=%.4f", epoch,
                                      eval.accuracy, eval.loss));
  }
}

void TrainingReporter::Finish(int64_t steps_done, RunSummary* summary) {
  if (show_) progress_.Finish();
  summary->steps = steps_done;
  summary->epochs = epochs_;
  summary->train_loss = epoch_steps_ > 0 ? epoch_loss_ / static_cast<double>(epoch_steps_) : 0.0;
  summary->train_seconds = train_seconds_;
  summary->images_per_sec =
      train_seconds_ > 0 ? static_cast<double>(steps_run_ * training_.batch_size) / train_seconds_
                         : 0.0;
  if (evaluated_) {
    summary->test_accuracy = last_eval_.accuracy;
    summary->test_loss = last_eval_.loss;
  }
}

}  // namespace strata
