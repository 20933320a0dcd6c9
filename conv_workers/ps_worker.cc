#include "conv_workers/ps_worker.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "conv_workers/worker_traffic.h"
#include "core/data/training_data.h"
#include "core/model/model.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/metrics_writer.h"
#include "core/train/training_reporter.h"
#include "core/util/log.h"
#include "runtime/cluster_hooks.h"
#include "runtime/device_backend.h"
#include "runtime/parameter_sync.h"
#include "runtime/step_loop.h"
#include "runtime/whole_model_program.h"

namespace strata {
namespace {

// The whole model on this worker's shard of each global batch; gradients
// pushed layer by layer as backward reaches them; worker 0 evaluates with
// the servers' state at epoch ends.
class PsProgram final : public WholeModelProgram {
 public:
  PsProgram(const WorkerOptions& options, int rank, TrainingData& data, Model& model,
            PsClient& client, ParameterSync& sync, TrainingReporter& reporter)
      : WholeModelProgram(*data.batches, model),
        options_(options),
        rank_(rank),
        data_(data),
        client_(client),
        sync_(sync),
        reporter_(reporter) {}

  absl::Status Backward(StepContext& ctx) override {
    model().Backward(loss().grad_logits, 0, -1, false, sync_.AfterLayer(ctx.iteration));
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Synchronise(StepContext& ctx) override {
    ctx.rewind_to = ctx.iteration;
    return sync_.CompleteOrRewind(&ctx.rewind_to);
  }
  absl::Status Boundary(StepContext& ctx) override {
    const int64_t done = ctx.iteration + 1;
    if (rank_ != 0 || !options_.config.training.evaluate || !reporter_.EpochEnds(done)) {
      return absl::OkStatus();
    }
    // With the servers' state (the mean over the workers); training goes
    // on with our own.
    STRATA_ASSIGN_OR_RETURN(StateSnapshot own, StateSnapshot::Take(model()));
    STRATA_RETURN_IF_ERROR_CTX(sync_.PullInto(KeyOwner::kConvWorkers, KeyKind::kState, done),
                               "pulling the state for evaluation");
    STRATA_ASSIGN_OR_RETURN(
        EvalResult eval,
        Evaluate(model(), data_.splits.test, data_.loader_options, options_.run.eval_limit));
    STRATA_RETURN_IF_ERROR(own.Restore());
    reporter_.Evaluated(done, eval);
    return absl::OkStatus();
  }
  TrafficTotals Traffic() const override {
    TrafficTotals t;
    t.sent[static_cast<int>(PeerKind::kServer)] = client_.bytes_sent();
    t.received[static_cast<int>(PeerKind::kServer)] = client_.bytes_received();
    return t;
  }

 private:
  const WorkerOptions& options_;
  int rank_;
  TrainingData& data_;
  PsClient& client_;
  ParameterSync& sync_;
  TrainingReporter& reporter_;
};

}  // namespace

absl::StatusOr<RunSummary> RunPsWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDeviceSpec(tc.device));
  STRATA_ASSIGN_OR_RETURN(const Backend* backend, OpenDevice(device, tc.tf32));
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(tc.seed), *backend));
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  STRATA_ASSIGN_OR_RETURN(const KeyLayout layout, KeyLayoutFor(*model, "ps", 0));
  ParameterSync sync(client->kv(), *model, ServerKeys(*model, layout), KeyOwner::kConvWorkers);
  const int rank = client->rank();
  SetLogProcess(absl::StrCat("worker ", rank));
  STRATA_RETURN_IF_ERROR(client->kv().SetPlan(
      PartitionPlan::Build(sync.plan_sizes(), client->kv().num_servers(), options.chunk_elements)));
  const std::string prefix = absl::StrCat("[worker ", rank, "] ");

  STRATA_ASSIGN_OR_RETURN(
      auto data, LoadTrainingData(config, rank, client->map().num_workers, options.run.train_limit));

  // Worker 0 seeds the servers; everyone then pulls the current values (a
  // restored server answers with its checkpoint, and training resumes there).
  STRATA_ASSIGN_OR_RETURN(const int64_t first_step, sync.Join(/*initialise=*/rank == 0));
  if (first_step > 0) {
    LogInfo("resuming at iteration %lld", static_cast<long long>(first_step));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics,
                          MetricsWriter::Open(rank == 0 ? options.run.metrics_out : ""));
  STRATA_ASSIGN_OR_RETURN(MetricsWriter records, MetricsWriter::Open(options.run.records_out));
  TrainingReporter reporter(tc, data->total_steps, data->steps_per_epoch, prefix,
                            options.run.progress && rank == 0, &metrics);
  RunSummary summary = NewRunSummary("ps", config, *model);

  PsProgram program(options, rank, *data, *model, *client, sync, reporter);
  StepLoopOptions lo;
  lo.device = options.device;
  lo.process = absl::StrCat("conv worker ", rank);
  lo.first_iteration = first_step;
  lo.total_iterations = data->total_steps;
  lo.records = &records;
  lo.reporter = &reporter;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Controller> controller,
                          MakeController(options.controller, rank));
  ClusterHooks hooks(*client, std::move(controller));
  STRATA_RETURN_IF_ERROR(hooks.DeclareWireFormat(config.cluster.wire_format));
  STRATA_RETURN_IF_ERROR(hooks.DeclareBatchShares(
      config.cluster.batch_shares, tc.batch_size, client->map().num_workers,
      [&program, rank](const std::vector<int64_t>& rows) { program.TakeShare(rows, rank); }));
  hooks.Attach(&lo);
  StepLoop loop(lo);
  client->set_wait_observer(loop.waits());
  model->set_wait_observer(loop.waits());
  STRATA_ASSIGN_OR_RETURN(const int64_t step, hooks.Run(loop, program));
  client->set_wait_observer(nullptr);
  model->set_wait_observer(nullptr);

  reporter.Finish(step, &summary);
  summary.device_peak_memory_bytes = backend->PeakMemoryBytes();
  if (rank == 0 && !options.parameters_out.empty()) {  // the model with the servers' state
    STRATA_RETURN_IF_ERROR_CTX(sync.PullInto(KeyOwner::kConvWorkers, KeyKind::kState, step),
                               "pulling the final state");
  }
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  PrintConvWorkerTraffic(rank, step - first_step, *client, nullptr, loop.times());
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
