#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/training_data.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/optim/parameter_optimizer.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/progress.h"
#include "core/train/training_reporter.h"
#include "core/util/clock.h"

namespace strata {
namespace {

constexpr int64_t kEvalBatch = 500;

}  // namespace

nlohmann::json RunSummary::ToJson() const {
  nlohmann::json j = {{"mode", mode},
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
  if (!seconds_per_iteration.empty()) j["seconds_per_iteration"] = seconds_per_iteration;
  return j;
}

RunSummary NewRunSummary(const std::string& mode, const JobConfig& config, const Model& model) {
  RunSummary summary;
  summary.mode = mode;
  summary.config = config.source;
  summary.batch_size = config.training.batch_size;
  summary.threads = CpuThreads();
  summary.parameters = model.num_parameter_elements();
  summary.forward_flops_per_image = static_cast<double>(model.ForwardFlopsPerSample());
  return summary;
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
  STRATA_ASSIGN_OR_RETURN(auto data, LoadTrainingData(config, 0, 1, options.train_limit));
  BatchLoader& loader = *data->loader;
  const BatchLoaderOptions& lo = data->loader_options;
  const int64_t steps_per_epoch = data->steps_per_epoch;
  const int64_t total_steps = data->total_steps;
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  STRATA_ASSIGN_OR_RETURN(auto optimizer, Optimizer::Create(config.optimizer));
  ParameterOptimizer opt(std::move(optimizer),
                         LrSchedule(config.schedule, config.optimizer.lr, total_steps),
                         model->parameters());

  if (options.restore) {
    STRATA_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(options.checkpoint_path));
    STRATA_RETURN_IF_ERROR_CTX(RestoreTrainingState(checkpoint, *model, opt).status(),
                               absl::StrCat("restoring ", options.checkpoint_path));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics, MetricsWriter::Open(options.metrics_out));
  TrainingReporter reporter(tc, total_steps, steps_per_epoch, "[single] ", options.progress,
                            &metrics);
  RunSummary summary = NewRunSummary("single", config, *model);

  int64_t step = opt.step();
  while (step < total_steps) {
    const double t0 = MonotonicSeconds();
    Batch batch = loader.ForStep(step);
    Tensor logits = model->Forward(batch.images, /*training=*/true);
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, true));
    model->Backward(loss.grad_logits);
    const float lr = opt.current_lr();
    opt.Step();
    reporter.StepDone(step, loss.loss, MonotonicSeconds() - t0, lr);
    ++step;
    if (!options.checkpoint_path.empty() && options.checkpoint_every > 0 &&
        step % options.checkpoint_every == 0) {
      STRATA_RETURN_IF_ERROR(
          WriteCheckpoint(options.checkpoint_path,
                          CaptureTrainingState(*model, opt, (step - 1) / steps_per_epoch)));
    }
    if (tc.evaluate && reporter.EpochEnds(step)) {
      STRATA_ASSIGN_OR_RETURN(EvalResult eval,
                              Evaluate(*model, data->splits.test, lo, options.eval_limit));
      reporter.Evaluated(step, eval);
    }
  }
  reporter.Finish(step, &summary);
  if (!options.checkpoint_path.empty()) {
    STRATA_RETURN_IF_ERROR(WriteCheckpoint(
        options.checkpoint_path, CaptureTrainingState(*model, opt, (step - 1) / steps_per_epoch)));
  }
  if (!options.parameters_out.empty()) {
    STRATA_RETURN_IF_ERROR(
        WriteCheckpoint(options.parameters_out, CaptureParameters(*model, step)));
  }
  if (!options.summary_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(options.summary_out, summary.ToJson()));
  }
  return summary;
}

}  // namespace strata
