#include "runtime/single_trainer.h"

#include "absl/strings/str_cat.h"
#include "core/data/training_data.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/optim/parameter_optimizer.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/training_reporter.h"
#include "runtime/device_backend.h"
#include "runtime/step_loop.h"
#include "runtime/whole_model_program.h"

namespace strata {
namespace {

// One process, the whole model: forward, backward, the optimizer step;
// checkpoints and evaluation at boundaries.
class SingleProgram final : public WholeModelProgram {
 public:
  SingleProgram(const RunOptions& options, const TrainingConfig& training, TrainingData& data,
                Model& model, ParameterOptimizer& optimizer, TrainingReporter& reporter)
      : WholeModelProgram(*data.batches, model),
        options_(options),
        training_(training),
        data_(data),
        optimizer_(optimizer),
        reporter_(reporter) {}

  absl::Status Backward(StepContext& ctx) override {
    model().Backward(loss().grad_logits);
    ctx.lr = optimizer_.current_lr();
    optimizer_.Step();
    return absl::OkStatus();
  }
  absl::Status Boundary(StepContext& ctx) override {
    const int64_t done = ctx.iteration + 1;
    if (!options_.checkpoint_path.empty() && options_.checkpoint_every > 0 &&
        done % options_.checkpoint_every == 0) {
      STRATA_RETURN_IF_ERROR(WriteCheckpoint(
          options_.checkpoint_path,
          CaptureTrainingState(model(), optimizer_, ctx.iteration / data_.steps_per_epoch)));
    }
    if (training_.evaluate && reporter_.EpochEnds(done)) {
      STRATA_ASSIGN_OR_RETURN(EvalResult eval, Evaluate(model(), data_.splits.test,
                                                        data_.loader_options, options_.eval_limit));
      reporter_.Evaluated(done, eval);
    }
    return absl::OkStatus();
  }

 private:
  const RunOptions& options_;
  const TrainingConfig& training_;
  TrainingData& data_;
  ParameterOptimizer& optimizer_;
  TrainingReporter& reporter_;
};

}  // namespace

absl::StatusOr<RunSummary> TrainSingle(const JobConfig& config, const RunOptions& options) {
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDeviceSpec(tc.device));
  STRATA_ASSIGN_OR_RETURN(const Backend* backend, OpenDevice(device, tc.tf32));
  STRATA_ASSIGN_OR_RETURN(auto data, LoadTrainingData(config, 0, 1, options.train_limit));
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(tc.seed), *backend));
  STRATA_ASSIGN_OR_RETURN(auto optimizer, Optimizer::Create(config.optimizer));
  ParameterOptimizer opt(std::move(optimizer),
                         LrSchedule(config.schedule, config.optimizer.lr, data->total_steps),
                         model->parameters());
  if (options.restore) {
    STRATA_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpoint(options.checkpoint_path));
    STRATA_RETURN_IF_ERROR_CTX(RestoreTrainingState(checkpoint, *model, opt).status(),
                               absl::StrCat("restoring ", options.checkpoint_path));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics, MetricsWriter::Open(options.metrics_out));
  STRATA_ASSIGN_OR_RETURN(MetricsWriter records, MetricsWriter::Open(options.records_out));
  TrainingReporter reporter(tc, data->total_steps, data->steps_per_epoch, "[single] ",
                            options.progress, &metrics);
  RunSummary summary = NewRunSummary("single", config, *model);
  SingleProgram program(options, tc, *data, *model, opt, reporter);
  StepLoopOptions lo;
  lo.process = "single";
  lo.first_iteration = opt.step();
  lo.total_iterations = data->total_steps;
  lo.records = &records;
  lo.reporter = &reporter;
  StepLoop loop(lo);
  STRATA_ASSIGN_OR_RETURN(const int64_t step, loop.Run(program));

  reporter.Finish(step, &summary);
  summary.device_peak_memory_bytes = backend->PeakMemoryBytes();
  if (!options.checkpoint_path.empty()) {
    STRATA_RETURN_IF_ERROR(
        WriteCheckpoint(options.checkpoint_path,
                        CaptureTrainingState(*model, opt, (step - 1) / data->steps_per_epoch)));
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
