#include "conv_workers/ps_worker.h"

#include "conv_workers/worker_traffic.h"
#include "runtime/parameter_sync.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/training_data.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/model/model.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/training_reporter.h"
#include "core/util/clock.h"

namespace strata {
absl::StatusOr<RunSummary> RunPsWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  STRATA_ASSIGN_OR_RETURN(const KeyLayout layout, KeyLayoutFor(*model, "ps", 0));
  ParameterSync sync(*client, *model, ServerKeys(*model, layout), KeyOwner::kConvWorkers);
  const int rank = client->rank();
  const int workers = client->num_workers();
  STRATA_RETURN_IF_ERROR(client->SetPlan(
      PartitionPlan::Build(sync.plan_sizes(), client->num_servers(), options.chunk_elements)));
  const std::string prefix = absl::StrCat("[worker ", rank, "] ");

  STRATA_ASSIGN_OR_RETURN(auto data,
                          LoadTrainingData(config, rank, workers, options.run.train_limit));
  BatchLoader& loader = *data->loader;
  const int64_t steps_per_epoch = data->steps_per_epoch;
  const int64_t total_steps = data->total_steps;

  // Worker 0 seeds the servers; everyone then pulls the current values (a
  // restored server answers with its checkpoint, and training resumes there).
  STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
  if (step > 0) {
    std::fprintf(stderr, "%sresuming at iteration %lld\n", prefix.c_str(),
                 static_cast<long long>(step));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics,
                          MetricsWriter::Open(rank == 0 ? options.run.metrics_out : ""));
  TrainingReporter reporter(tc, total_steps, steps_per_epoch, prefix,
                            options.run.progress && rank == 0, &metrics);
  RunSummary summary = NewRunSummary("ps", config, *model);

  const int64_t first_step = step;
  StepTimes times;
  while (step < total_steps) {
    const double t0 = MonotonicSeconds();
    Batch batch = loader.ForStep(step);
    const double t1 = MonotonicSeconds();
    Tensor logits = model->Forward(batch.images, /*training=*/true);
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, true));
    model->Backward(loss.grad_logits, 0, -1, false, sync.AfterLayer(step));
    const double t2 = MonotonicSeconds();
    STRATA_ASSIGN_OR_RETURN(const bool completed, sync.CompleteOrRewind(&step, prefix));
    const double t3 = MonotonicSeconds();
    if (step > first_step) times.Add(t2 - t1, t3 - t2, t3 - t0);
    if (!completed) continue;
    reporter.StepDone(step, loss.loss, t3 - t0);
    ++step;
    if (rank == 0 && tc.evaluate && reporter.EpochEnds(step)) {
      // With the servers' state (the mean over the workers); training goes
      // on with our own.
      StateSnapshot own(*model);
      STRATA_RETURN_IF_ERROR_CTX(sync.PullInto(KeyOwner::kConvWorkers, KeyKind::kState, step),
                                 "pulling the state for evaluation");
      STRATA_ASSIGN_OR_RETURN(
          EvalResult eval,
          Evaluate(*model, data->splits.test, data->loader_options, options.run.eval_limit));
      own.Restore();
      reporter.Evaluated(step, eval);
    }
  }
  reporter.Finish(step, &summary);
  if (rank == 0 && !options.parameters_out.empty()) {  // the model with the servers' state
    STRATA_RETURN_IF_ERROR_CTX(sync.PullInto(KeyOwner::kConvWorkers, KeyKind::kState, step),
                               "pulling the final state");
  }
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  PrintConvWorkerTraffic(rank, step - first_step, *client, nullptr, times);
  if (rank == 0 && !options.run.summary_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(options.run.summary_out, summary.ToJson()));
  }
  if (rank == 0 && !options.parameters_out.empty()) {
    STRATA_RETURN_IF_ERROR(
        WriteCheckpoint(options.parameters_out, CaptureParameters(*model, step)));
  }
  return summary;
}

}  // namespace strata
