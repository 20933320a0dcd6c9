#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/optim/parameter_optimizer.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/progress.h"

namespace strata {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr int64_t kEvalBatch = 500;

}  // namespace

nlohmann::json RunSummary::ToJson() const {
  return {{"mode", mode},
          {"config", config},
          {"steps", steps},
          {"epochs", epochs},
          {"batch_size", batch_size},
          {"threads", threads},
          {"parameters", parameters},
          {"test_accuracy", test_accuracy},
          {"test_loss", test_loss},
          {"train_loss", train_loss},
          {"images_per_sec", images_per_sec},
          {"train_seconds", train_seconds},
          {"forward_flops_per_image", forward_flops_per_image},
          {"bytes_per_iteration", bytes_per_iteration},
          {"bytes_per_iteration_by_role", bytes_per_iteration_by_role}};
}

absl::StatusOr<EvalResult> Evaluate(Model& model, const Dataset& dataset,
                                    const BatchLoaderOptions& normalization, int64_t limit) {
  BatchLoaderOptions o = normalization;
  o.global_batch = kEvalBatch;
  o.rank = 0;
  o.world = 1;
  o.shuffle = false;
  o.drop_last = false;
  BatchLoader loader(dataset, o);
  loader.StartEpoch(0);
  const int64_t total = limit > 0 ? std::min(limit, dataset.size()) : dataset.size();
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (int64_t step = 0; result.samples < total; ++step) {
    Batch batch = loader.Get(step);
    const int64_t take = std::min<int64_t>(batch.images.dim(0), total - result.samples);
    Tensor images = batch.images.Slice(0, take);
    batch.labels.resize(take);
    Tensor logits = model.Forward(images, /*training=*/false);
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, false));
    loss_sum += loss.loss * static_cast<double>(take);
    correct += loss.correct;
    result.samples += take;
  }
  if (result.samples > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
    result.loss = loss_sum / static_cast<double>(result.samples);
  }
  return result;
}

absl::StatusOr<RunSummary> TrainSingle(const JobConfig& config, const RunOptions& options) {
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(DataSplits data,
                          LoadDataSplits(config.data, config.model.input, config.model.classes,
                                         static_cast<uint64_t>(tc.seed)));
  if (options.train_limit > 0 && options.train_limit < data.train.size()) {
    data.train.labels.resize(options.train_limit);
    data.train.pixels.resize(options.train_limit * data.train.sample_shape.numel());
  }
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  STRATA_ASSIGN_OR_RETURN(auto optimizer, Optimizer::Create(config.optimizer));

  BatchLoaderOptions lo;
  lo.global_batch = tc.batch_size;
  lo.seed = static_cast<uint64_t>(tc.seed);
  lo.mean = config.data.mean;
  lo.std = config.data.std;
  BatchLoader loader(data.train, lo);
  const int64_t steps_per_epoch = loader.steps_per_epoch();
  if (steps_per_epoch == 0) {
    return absl::InvalidArgumentError(absl::StrCat("the training set (", data.train.size(),
                                                   " images) is smaller than one batch (",
                                                   tc.batch_size, ")"));
  }
  int64_t total_steps = steps_per_epoch * tc.epochs;
  if (tc.max_steps > 0) total_steps = std::min(total_steps, tc.max_steps);
  ParameterOptimizer opt(std::move(optimizer),
                         LrSchedule(config.schedule, config.optimizer.lr, total_steps),
                         model->parameters());

  if (options.restore) {
    STRATA_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(options.checkpoint_path));
    STRATA_RETURN_IF_ERROR_CTX(RestoreTrainingState(checkpoint, *model, opt).status(),
                               absl::StrCat("restoring ", options.checkpoint_path));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics, MetricsWriter::Open(options.metrics_out));
  ProgressReporter progress(stderr, "[single] ", tc.log_every);
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;

  RunSummary summary;
  summary.mode = "single";
  summary.config = config.source;
  summary.batch_size = tc.batch_size;
  summary.threads = CpuThreads();
  summary.parameters = model->num_parameter_elements();
  summary.forward_flops_per_image = static_cast<double>(model->ForwardFlopsPerSample());

  double train_seconds = 0.0;
  int64_t trained_images = 0;
  int64_t step = opt.step();
  double epoch_loss_sum = 0.0;
  int64_t epoch_loss_steps = 0;
  double window_loss = 0.0;
  int64_t window_steps = 0;
  while (step < total_steps) {
    const int64_t epoch = step / steps_per_epoch;
    loader.StartEpoch(epoch);
    epoch_loss_sum = 0.0;
    epoch_loss_steps = 0;
    for (int64_t s = step % steps_per_epoch; s < steps_per_epoch && step < total_steps; ++s) {
      const double t0 = Now();
      Batch batch = loader.Get(s);
      Tensor logits = model->Forward(batch.images, /*training=*/true);
      STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, true));
      model->Backward(loss.grad_logits);
      const float lr = opt.current_lr();
      opt.Step();
      const double dt = Now() - t0;
      train_seconds += dt;
      trained_images += batch.images.dim(0);
      ++step;
      epoch_loss_sum += loss.loss;
      ++epoch_loss_steps;
      window_loss += loss.loss;
      ++window_steps;

      ProgressState ps;
      ps.epoch = epoch + 1;
      ps.epochs = epochs;
      ps.step_in_epoch = s + 1;
      ps.steps_per_epoch = steps_per_epoch;
      ps.steps_done = step;
      ps.total_steps = total_steps;
      ps.loss = loss.loss;
      ps.images_per_sec = static_cast<double>(trained_images) / train_seconds;
      ps.seconds_per_step = train_seconds * static_cast<double>(tc.batch_size) /
                            static_cast<double>(std::max<int64_t>(1, trained_images));
      if (options.progress) progress.Update(ps);
      if (step % tc.log_every == 0 || step == total_steps) {
        metrics.Write({{"event", "train"},
                       {"epoch", epoch + 1},
                       {"step", step},
                       {"loss", window_loss / static_cast<double>(window_steps)},
                       {"lr", lr},
                       {"images_per_sec", ps.images_per_sec}});
        window_loss = 0.0;
        window_steps = 0;
      }
      if (!options.checkpoint_path.empty() && options.checkpoint_every > 0 &&
          step % options.checkpoint_every == 0) {
        STRATA_RETURN_IF_ERROR(
            WriteCheckpoint(options.checkpoint_path, CaptureTrainingState(*model, opt, epoch)));
      }
    }
    const bool epoch_done = step % steps_per_epoch == 0 || step == total_steps;
    if (tc.evaluate && epoch_done) {
      STRATA_ASSIGN_OR_RETURN(EvalResult eval, Evaluate(*model, data.test, lo, options.eval_limit));
      summary.test_accuracy = eval.accuracy;
      summary.test_loss = eval.loss;
      metrics.Write({{"event", "eval"},
                     {"epoch", epoch + 1},
                     {"step", step},
                     {"test_accuracy", eval.accuracy},
                     {"test_loss", eval.loss}});
      if (options.progress) {
        progress.Message(absl::StrFormat("epoch %d: test_accuracy=%.4f test_loss=%.4f", epoch + 1,
                                         eval.accuracy, eval.loss));
      }
    }
  }
  if (options.progress) progress.Finish();
  if (!options.checkpoint_path.empty()) {
    STRATA_RETURN_IF_ERROR(WriteCheckpoint(
        options.checkpoint_path, CaptureTrainingState(*model, opt, (step - 1) / steps_per_epoch)));
  }
  if (!options.parameters_out.empty()) {
    STRATA_RETURN_IF_ERROR(
        WriteCheckpoint(options.parameters_out, CaptureParameters(*model, step)));
  }
  summary.steps = step;
  summary.epochs = epochs;
  summary.train_loss = epoch_loss_steps > 0 ? epoch_loss_sum / epoch_loss_steps : 0.0;
  summary.train_seconds = train_seconds;
  summary.images_per_sec = train_seconds > 0 ? trained_images / train_seconds : 0.0;
  if (!options.summary_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(options.summary_out, summary.ToJson()));
  }
  return summary;
}

}  // namespace strata
