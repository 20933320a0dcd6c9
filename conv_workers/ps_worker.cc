#include "conv_workers/ps_worker.h"

#include "conv_workers/parameter_sync.h"
#include "core/net/traffic.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/batch_loader.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/model/model.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/progress.h"

namespace strata {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<RunSummary> RunPsWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  ParameterSync sync(*client, *model, 0, model->num_layers());
  const int rank = client->rank();
  const int workers = client->num_workers();
  if (tc.batch_size % workers != 0) {
    return absl::InvalidArgumentError(absl::StrCat("training.batch_size ", tc.batch_size,
                                                   " is not divisible by the ", workers,
                                                   " workers"));
  }
  STRATA_RETURN_IF_ERROR(client->SetPlan(
      PartitionPlan::Build(sync.sizes(), client->num_servers(), options.chunk_elements)));
  const std::string prefix = absl::StrCat("[worker ", rank, "] ");

  STRATA_ASSIGN_OR_RETURN(
      DataSplits data, LoadDataSplits(config.data, config.model.input, config.model.classes,
                                      static_cast<uint64_t>(tc.seed)));
  if (options.run.train_limit > 0 && options.run.train_limit < data.train.size()) {
    data.train.labels.resize(options.run.train_limit);
    data.train.pixels.resize(options.run.train_limit * data.train.sample_shape.numel());
  }
  BatchLoaderOptions lo;
  lo.global_batch = tc.batch_size;
  lo.rank = rank;
  lo.world = workers;
  lo.seed = static_cast<uint64_t>(tc.seed);
  lo.mean = config.data.mean;
  lo.std = config.data.std;
  BatchLoader loader(data.train, lo);
  const int64_t steps_per_epoch = loader.steps_per_epoch();
  if (steps_per_epoch == 0) {
    return absl::InvalidArgumentError("the training set is smaller than one global batch");
  }
  const int64_t total_steps = TotalTrainingSteps(tc, data.train.size());

  // Worker 0 seeds the servers; everyone then pulls the current values (a
  // restored server answers with its checkpoint, and training resumes there).
  STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
  if (step > 0) {
    std::fprintf(stderr, "%sresuming at iteration %lld\n", prefix.c_str(),
                 static_cast<long long>(step));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics,
                          MetricsWriter::Open(rank == 0 ? options.run.metrics_out : ""));
  ProgressReporter progress(stderr, prefix, tc.log_every);
  const bool show = options.run.progress && rank == 0;
  const int64_t epochs = (total_steps + steps_per_epoch - 1) / steps_per_epoch;
  RunSummary summary;
  summary.mode = "ps";
  summary.config = config.source;
  summary.batch_size = tc.batch_size;
  summary.threads = CpuThreads();
  summary.parameters = model->num_parameter_elements();
  summary.forward_flops_per_image = static_cast<double>(model->ForwardFlopsPerSample());

  double train_seconds = 0.0, epoch_loss = 0.0, window_loss = 0.0;
  int64_t epoch_steps = 0, window_steps = 0, steps_run = 0;
  int64_t loaded_epoch = -1;
  while (step < total_steps) {
    const int64_t epoch = step / steps_per_epoch;
    const int64_t s = step % steps_per_epoch;
    if (epoch != loaded_epoch) {
      loader.StartEpoch(epoch);
      loaded_epoch = epoch;
      epoch_loss = 0.0;
      epoch_steps = 0;
    }
    const double t0 = Now();
    Batch batch = loader.Get(s);
    Tensor logits = model->Forward(batch.images, /*training=*/true);
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, true));
    const int64_t iteration = step;
    model->Backward(loss.grad_logits, 0, -1, false, sync.AfterLayer(iteration));
    absl::Status exchanged = sync.Finish();
    if (absl::IsAborted(exchanged)) {
      // A server came back from a checkpoint: drop what is in flight and
      // continue from the servers' iteration (the data order follows it).
      std::fprintf(stderr, "%s%s\n", prefix.c_str(), std::string(exchanged.message()).c_str());
      STRATA_ASSIGN_OR_RETURN(step, sync.Rejoin());
      std::fprintf(stderr, "%srewound to iteration %lld\n", prefix.c_str(),
                   static_cast<long long>(step));
      loaded_epoch = -1;
      continue;
    }
    STRATA_RETURN_IF_ERROR_CTX(exchanged, absl::StrCat("iteration ", iteration));
    train_seconds += Now() - t0;
    ++step;
    ++steps_run;
    epoch_loss += loss.loss;
    ++epoch_steps;
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
    ps.images_per_sec = static_cast<double>(steps_run * tc.batch_size) / train_seconds;
    ps.seconds_per_step = train_seconds / static_cast<double>(steps_run);
    if (show) progress.Update(ps);
    if (step % tc.log_every == 0 || step == total_steps) {
      metrics.Write({{"event", "train"},
                     {"epoch", epoch + 1},
                     {"step", step},
                     {"loss", window_loss / static_cast<double>(window_steps)},
                     {"images_per_sec", ps.images_per_sec}});
      window_loss = 0.0;
      window_steps = 0;
    }
    const bool epoch_done = step % steps_per_epoch == 0 || step == total_steps;
    if (rank == 0 && tc.evaluate && epoch_done) {
      STRATA_ASSIGN_OR_RETURN(EvalResult eval,
                              Evaluate(*model, data.test, lo, options.run.eval_limit));
      summary.test_accuracy = eval.accuracy;
      summary.test_loss = eval.loss;
      metrics.Write({{"event", "eval"},
                     {"epoch", epoch + 1},
                     {"step", step},
                     {"test_accuracy", eval.accuracy},
                     {"test_loss", eval.loss}});
      if (show) {
        progress.Message(absl::StrFormat("epoch %d: test_accuracy=%.4f test_loss=%.4f",
                                         epoch + 1, eval.accuracy, eval.loss));
      }
    }
  }
  if (show) progress.Finish();
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  TrafficReport traffic;
  traffic.process = absl::StrCat("worker ", rank);
  traffic.steps = steps_run;
  traffic.AddSent(PeerKind::kServer, client->bytes_sent());
  traffic.AddReceived(PeerKind::kServer, client->bytes_received());
  traffic.Print();
  summary.steps = step;
  summary.epochs = epochs;
  summary.train_loss = epoch_steps > 0 ? epoch_loss / static_cast<double>(epoch_steps) : 0.0;
  summary.train_seconds = train_seconds;
  summary.images_per_sec =
      train_seconds > 0 ? static_cast<double>(steps_run * tc.batch_size) / train_seconds : 0.0;
  if (rank == 0 && !options.run.summary_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(options.run.summary_out, summary.ToJson()));
  }
  if (rank == 0 && !options.parameters_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteCheckpoint(options.parameters_out, CaptureParameters(*model, step)));
  }
  return summary;
}

}  // namespace strata
