#include "fc_workers/fc_worker.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/control/knobs.h"
#include "core/data/training_data.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/model/fc_batching.h"
#include "core/model/model.h"
#include "core/net/message_endpoint.h"
#include "core/net/traffic.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/optim/parameter_optimizer.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/train/checkpoint_epochs.h"
#include "core/train/metrics_writer.h"
#include "core/train/training_reporter.h"
#include "core/util/clock.h"
#include "core/util/crash_point.h"
#include "core/util/log.h"
#include "core/util/ready_file.h"
#include "fc_workers/fc_server.h"
#include "fc_workers/head_expert_group.h"
#include "runtime/cluster_hooks.h"
#include "runtime/device_backend.h"
#include "runtime/parameter_sync.h"
#include "runtime/step_loop.h"

namespace strata {
namespace {

// Pulls the trunk (parameters and state) at version `iteration` so the
// whole model can be evaluated or written.
absl::Status PullTrunk(ParameterSync& sync, int64_t iteration) {
  STRATA_RETURN_IF_ERROR(sync.PullInto(KeyOwner::kConvWorkers, KeyKind::kParameter, iteration));
  return sync.PullInto(KeyOwner::kConvWorkers, KeyKind::kState, iteration);
}

// Our part of each coordinated checkpoint epoch: what lives only in this
// process (the head with its optimizer state when we are the only FC
// worker, our experts with theirs when several split them). An FC worker
// whose state is all on the servers (a shared head without experts) has
// no part, and reports each epoch as written once it gets there.
class FcCheckpoints {
 public:
  FcCheckpoints(std::string dir, int64_t every, int rank, Model& model, ParameterOptimizer* update)
      : dir_(std::move(dir)),
        every_(every),
        part_(CheckpointPartName("fc_worker", rank)),
        model_(model),
        update_(update) {}

  // After iteration done - 1: our part of epoch `done` when it is one,
  // and the newest part written, and any that failed, to the coordinator
  // (with our heartbeats).
  void AtBoundary(int64_t done, MembershipClient& membership) {
    if (every_ > 0 && done % every_ == 0) {
      if (update_ != nullptr) {
        writer_.Write(EpochPartPath(dir_, done, part_), done,
                      CaptureTrainingState(model_, *update_, done));
      } else {
        no_part_until_ = done;
      }
    }
    Report(membership);
  }

  // Restores our part of `epoch`, the one the coordinator chose for every
  // process (its cluster map says; -1: none); returns its iteration.
  absl::StatusOr<int64_t> Restore(int64_t epoch) {
    if (epoch < 0) {
      return absl::FailedPreconditionError(
          "--restore: the coordinator restores no checkpoint epoch (give --restore to every "
          "role, or to none)");
    }
    if (update_ == nullptr) return epoch;
    const std::string path = EpochPartPath(dir_, epoch, part_);
    absl::StatusOr<Checkpoint> checkpoint = ReadCheckpoint(path);
    CrashPoint("restore");
    absl::StatusOr<int64_t> restored =
        checkpoint.ok() ? RestoreTrainingState(*checkpoint, model_, *update_) : checkpoint.status();
    STRATA_RETURN_IF_ERROR_CTX(restored.status(),
                               absl::StrCat("restoring checkpoint epoch ", epoch,
                                            ", which the coordinator chose, from ", path));
    LogInfo("restored %s at iteration %lld", path.c_str(), static_cast<long long>(epoch));
    return epoch;
  }

  // Writes what is queued and reports it: the coordinator completes the
  // final epoch with what our DONE says.
  void Flush(MembershipClient& membership) {
    writer_.Flush();
    Report(membership);
  }

 private:
  void Report(MembershipClient& membership) {
    membership.ReportCheckpointed(std::max(writer_.last_written(), no_part_until_));
    for (const auto& [iteration, why] : writer_.TakeFailures()) {
      membership.ReportCheckpointFailure(iteration, std::string(why.message()));
    }
  }

  std::string dir_;
  int64_t every_;
  std::string part_;
  Model& model_;
  ParameterOptimizer* update_;
  int64_t no_part_until_ = -1;
  CheckpointWriter writer_;
};

// One FC worker's iteration on the StepLoop, under each FC batching
// (core/model/fc_batching.h; the knob takes effect at iteration boundaries):
//   gathered: its conv workers' activations gathered (load: the FC worker's
//     input is their output, so the phase is a wait), the head's forward
//     and loss over them all (forward), its backward with the shared
//     head's pushes and each conv worker answered its gradient slice, the
//     local update (backward);
//   arrival: the first conv worker's activations (load); for each conv
//     worker in the order they come, the head's forward, loss and backward
//     over its rows and its answer, the waits for the next in between
//     (forward); the head's gradients summed over them pushed (a shared
//     head) and the local update (backward).
// Then the head's pushes and pulls completed (synchronise); evaluation at
// epoch ends (boundary).
class FcProgram final : public StepProgram {
 public:
  struct Parts {
    Model& model;
    int split;
    FcServer& server;
    PsClient& client;
    ParameterSync& sync;
    HeadExpertGroup* experts;          // null: no MoE layer in the head
    ParameterOptimizer* local_update;  // null: nothing updated here
    TrainingReporter& reporter;
    TrainingData& data;
    FcCheckpoints* checkpoints;  // null: no checkpoints
  };
  // `k`: conv workers served; `shared_head`: several FC workers reduce the
  // head through the servers; `expert_parallel`: and split its experts.
  FcProgram(const WorkerOptions& options, int rank, double k, int fc_workers, bool shared_head,
            bool expert_parallel, FcBatching batching, Parts parts)
      : options_(options),
        rank_(rank),
        k_(k),
        fc_workers_(fc_workers),
        shared_head_(shared_head),
        expert_parallel_(expert_parallel),
        batching_(batching),
        p_(parts) {}

  // From the next iteration on (the fc.batching knob's applier).
  void set_batching(FcBatching batching) { batching_ = batching; }

  absl::Status Load(StepContext& ctx) override {
    if (batching_ == FcBatching::kGathered) {
      STRATA_RETURN_IF_ERROR(p_.server.Gather(ctx.iteration, options_.client.timeout));
      std::tie(x_, labels_) = p_.server.Batch();
    } else {
      p_.server.Begin(ctx.iteration);
      STRATA_ASSIGN_OR_RETURN(next_, p_.server.NextArrival(ctx.iteration, options_.client.timeout));
    }
    ctx.rows = p_.server.total_rows();
    return absl::OkStatus();
  }
  absl::Status Forward(StepContext& ctx) override {
    if (batching_ == FcBatching::kArrival) return TrainOnEachArrival(ctx);
    STRATA_ASSIGN_OR_RETURN(const Tensor x, ToDevice(p_.model.backend(), x_));
    Tensor logits = p_.model.Forward(x, /*training=*/true, p_.split, -1);
    if (p_.experts != nullptr) STRATA_RETURN_IF_ERROR_CTX(p_.experts->status(), "MoE forward");
    STRATA_ASSIGN_OR_RETURN(loss_, WeightedLoss(logits, labels_));
    ctx.loss = loss_.loss;
    return absl::OkStatus();
  }
  absl::Status Backward(StepContext& ctx) override {
    if (batching_ == FcBatching::kGathered) {
      Tensor grad_x = p_.model.Backward(
          loss_.grad_logits, p_.split, -1, /*need_input_grad=*/true,
          shared_head_ ? p_.sync.AfterLayer(ctx.iteration) : std::function<void(int)>());
      if (p_.experts != nullptr) STRATA_RETURN_IF_ERROR_CTX(p_.experts->status(), "MoE backward");
      STRATA_ASSIGN_OR_RETURN(const Tensor answer, ForTheTrunk(grad_x));
      p_.server.Answer(ctx.iteration, answer);
    } else if (shared_head_) {
      // The summed gradients are final: push the head's layers, last first,
      // as a gathered backward would have.
      const std::function<void(int)> push = p_.sync.AfterLayer(ctx.iteration);
      for (int i = p_.model.num_layers() - 1; i >= p_.split; --i) push(i);
    }
    if (p_.local_update != nullptr) p_.local_update->Step();
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Synchronise(StepContext&) override {
    if (shared_head_) STRATA_RETURN_IF_ERROR_CTX(p_.sync.Finish(), "head sync");
    return true;
  }
  absl::Status Boundary(StepContext& ctx) override {
    const int64_t done = ctx.iteration + 1;
    if (p_.checkpoints != nullptr) p_.checkpoints->AtBoundary(done, p_.client.membership());
    // Collective with split experts: every FC worker needs the same
    // --evaluate (the launcher passes it to all).
    if (!options_.config.training.evaluate || !p_.reporter.EpochEnds(done)) return absl::OkStatus();
    if (expert_parallel_) {
      STRATA_RETURN_IF_ERROR_CTX(p_.experts->GatherForEvaluation(), "gathering the MoE experts");
    }
    if (rank_ != 0) return absl::OkStatus();
    STRATA_RETURN_IF_ERROR_CTX(PullTrunk(p_.sync, done), "pulling the trunk for evaluation");
    STRATA_ASSIGN_OR_RETURN(
        EvalResult eval,
        Evaluate(p_.model, p_.data.splits.test, p_.data.loader_options, options_.run.eval_limit));
    p_.reporter.Evaluated(done, eval);
    return absl::OkStatus();
  }
  TrafficTotals Traffic() const override {
    TrafficTotals t;
    t.sent[static_cast<int>(PeerKind::kServer)] = p_.client.bytes_sent();
    t.received[static_cast<int>(PeerKind::kServer)] = p_.client.bytes_received();
    t.sent[static_cast<int>(PeerKind::kConv)] = p_.server.bytes_sent();
    t.received[static_cast<int>(PeerKind::kConv)] = p_.server.bytes_received();
    if (p_.experts != nullptr) {
      t.sent[static_cast<int>(PeerKind::kFc)] = p_.experts->bytes_sent();
      t.received[static_cast<int>(PeerKind::kFc)] = p_.experts->bytes_received();
    }
    return t;
  }

 private:
  // The loss over `logits`' rows with its gradient weighted by those rows'
  // share of the global batch against an even share's, so the gradients
  // summed over every FC worker's rows (the shared head's, averaged over
  // FC workers; or ours, summed over arrivals) are the mean over the whole
  // global batch. The head's own losses (MoE load balancing) are weighted
  // alike in the Backward that follows.
  absl::StatusOr<LossResult> WeightedLoss(const Tensor& logits,
                                          const std::vector<int32_t>& labels) {
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, labels, true));
    const double global = static_cast<double>(options_.config.training.batch_size);
    const double weight = static_cast<double>(logits.dim(0)) * fc_workers_ / global;
    if (weight != 1.0) {
      STRATA_RETURN_IF_ERROR(
          p_.model.backend().Scale(static_cast<float>(weight), loss.grad_logits));
    }
    p_.model.SetLossWeight(static_cast<float>(weight), p_.split, -1);
    return loss;
  }

  // Each sample's input gradient carries F / G (the loss weighted above);
  // with k = R / F conv workers each, k times that is R / G, so the
  // servers' mean over the R conv workers' trunk gradients is the mean
  // over the global batch G (with even shares: each conv worker's mean
  // over its own samples). The answer goes out from the host.
  absl::StatusOr<Tensor> ForTheTrunk(const Tensor& grad_x) {
    STRATA_RETURN_IF_ERROR(p_.model.backend().Scale(static_cast<float>(k_), grad_x));
    return ToHost(grad_x);
  }

  // Arrival batching's forward phase: every conv worker's rows through the
  // head on their own, from the one Load took on, each answered at once;
  // the head's parameter gradients left summed over them all.
  absl::Status TrainOnEachArrival(StepContext& ctx) {
    double loss_sum = 0;
    const int arrivals = p_.server.conv_workers();
    for (int n = 0; n < arrivals; ++n) {
      if (n > 0) {
        STRATA_ASSIGN_OR_RETURN(next_,
                                p_.server.NextArrival(ctx.iteration, options_.client.timeout));
      }
      auto [rows, labels] = p_.server.Rows(next_);
      STRATA_ASSIGN_OR_RETURN(const Tensor x, ToDevice(p_.model.backend(), rows));
      Tensor logits = p_.model.Forward(x, /*training=*/true, p_.split, -1);
      if (p_.experts != nullptr) STRATA_RETURN_IF_ERROR_CTX(p_.experts->status(), "MoE forward");
      STRATA_ASSIGN_OR_RETURN(LossResult loss, WeightedLoss(logits, labels));
      STRATA_ASSIGN_OR_RETURN(const double arrival_loss, loss.loss.Get());
      loss_sum += arrival_loss * static_cast<double>(x.dim(0));
      Tensor grad_x = p_.model.Backward(loss.grad_logits, p_.split, -1, /*need_input_grad=*/true);
      if (p_.experts != nullptr) STRATA_RETURN_IF_ERROR_CTX(p_.experts->status(), "MoE backward");
      STRATA_ASSIGN_OR_RETURN(const Tensor answer, ForTheTrunk(grad_x));
      p_.server.AnswerOne(next_, ctx.iteration, answer);
      STRATA_RETURN_IF_ERROR(SumHeadGradients(n, arrivals));
    }
    ctx.loss = loss_sum / static_cast<double>(p_.server.total_rows());
    return absl::OkStatus();
  }

  // After the backward of arrival n of `arrivals`: the head's gradients
  // summed over the arrivals so far, in place where its layers add to their
  // gradients, in sums_ for the parameters of those that overwrite them;
  // after the last, the total is in every parameter's gradient and the
  // layers overwrite again.
  absl::Status SumHeadGradients(int n, int arrivals) {
    if (arrivals == 1) return absl::OkStatus();
    if (n == 0) overwritten_ = p_.model.SetAccumulateGradients(true, p_.split, -1);
    if (n == arrivals - 1) p_.model.SetAccumulateGradients(false, p_.split, -1);
    const Backend& backend = p_.model.backend();
    sums_.resize(overwritten_.size());
    for (size_t j = 0; j < overwritten_.size(); ++j) {
      const Tensor& grad = overwritten_[j]->grad;
      if (n == 0) {
        if (!sums_[j].defined() || sums_[j].numel() != grad.numel()) {
          sums_[j] = backend.Empty(grad.shape());
        }
        STRATA_RETURN_IF_ERROR(backend.Copy(grad, sums_[j]));
      } else if (n < arrivals - 1) {
        STRATA_RETURN_IF_ERROR(backend.Axpy(1.0f, grad, sums_[j]));
      } else {
        STRATA_RETURN_IF_ERROR(backend.Axpy(1.0f, sums_[j], grad));
      }
    }
    return absl::OkStatus();
  }

  const WorkerOptions& options_;
  int rank_;
  double k_;
  int fc_workers_;
  bool shared_head_;
  bool expert_parallel_;
  FcBatching batching_;
  Parts p_;
  // Gathered: the batch and its loss, from forward to backward.
  Tensor x_;
  std::vector<int32_t> labels_;
  LossResult loss_;
  // Arrival: the conv worker whose rows come next; the parameters whose
  // layers cannot add to their gradients, and their gradients summed over
  // the arrivals so far.
  int next_ = -1;
  std::vector<Parameter*> overwritten_;
  std::vector<Tensor> sums_;
};

}  // namespace

absl::StatusOr<RunSummary> RunFcWorker(const FcWorkerOptions& fc_options) {
  const WorkerOptions& options = fc_options.worker;
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDeviceSpec(tc.device));
  STRATA_ASSIGN_OR_RETURN(const Backend* backend, OpenDevice(device, tc.tf32));
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(tc.seed), *backend));
  STRATA_RETURN_IF_ERROR(model->RequireSplit());
  const int split = model->split_index();
  zmq::context_t context(1);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ZmqEndpoint> bound,
                          ZmqEndpoint::Bind(context, fc_options.serving, options.client.limits));
  std::unique_ptr<MessageEndpoint> socket =
      Decorated(std::move(bound), fc_options.decorate_endpoint);
  PsClientOptions co = options.client;
  co.role = wire::Role::FC_WORKER;
  co.serving_address = socket->address();
  if (co.rank < 0) return absl::InvalidArgumentError("an FC worker needs --rank");
  // MoE layers in the head: the other FC workers must reach our share of
  // the experts (used when there are several of us).
  ExpertExchangeOptions eo;
  eo.rank = co.rank;
  eo.credentials = co.credentials;
  eo.timeout = co.timeout;
  eo.limits = co.limits;
  eo.decorate_endpoint = fc_options.decorate_endpoint;
  STRATA_ASSIGN_OR_RETURN(auto experts,
                          HeadExpertGroup::Bind(*model, split, fc_options.serving, eo));
  if (experts != nullptr) co.peer_address = experts->address();
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(co));
  const int rank = client->rank();
  const int fc_workers = client->map().num_fc_workers;
  const int conv_workers = client->map().num_workers;
  if (conv_workers % fc_workers != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(conv_workers, " conv workers do not divide evenly over ", fc_workers,
                     " FC workers (every FC worker must serve the same number)"));
  }
  if (tc.batch_size % conv_workers != 0) {
    return absl::InvalidArgumentError(absl::StrCat("training.batch_size ", tc.batch_size,
                                                   " is not divisible by the ", conv_workers,
                                                   " conv workers"));
  }
  // One FC worker keeps the head to itself; several keep their replicas
  // identical by reducing head gradients through the servers, on the head's
  // own keys: conv workers never see them — except the MoE experts, which
  // are split over the FC workers and never leave them.
  const bool shared_head = fc_workers > 1;
  const bool expert_parallel = shared_head && experts != nullptr;
  if (expert_parallel) {
    STRATA_RETURN_IF_ERROR(experts->Join(client->map().fc_peer_addresses));
    LogInfo("holds its share of the MoE experts; peers reach it on %s", experts->address().c_str());
  }
  STRATA_ASSIGN_OR_RETURN(const KeyLayout layout, KeyLayoutFor(*model, "stanza", fc_workers));
  // Our keys (the shared head's), and the conv workers' trunk, which we
  // pull to evaluate and to write the model.
  ParameterSync sync(client->kv(), *model, ServerKeys(*model, layout), KeyOwner::kFcWorkers);
  STRATA_RETURN_IF_ERROR(client->kv().SetPlan(
      PartitionPlan::Build(sync.plan_sizes(), client->kv().num_servers(), options.chunk_elements)));
  std::vector<int> mine;
  for (int r = 0; r < conv_workers; ++r) {
    if (r % fc_workers == rank) mine.push_back(r);
  }
  FcServer server(*socket, options.client.limits, mine, model->boundary_shape(),
                  config.model.classes, co.credentials, rank);
  LogInfo("serving conv workers %s on %s", absl::StrJoin(mine, ",").c_str(),
          socket->address().c_str());
  STRATA_RETURN_IF_ERROR_CTX(
      WriteReadyFile(fc_options.ready_file,
                     {{"role", "fc_worker"},
                      {"rank", rank},
                      {"address", socket->address()},
                      {"peer_address", experts != nullptr ? experts->address() : ""}}),
      "writing --ready-file");

  // The FC worker reads no training batches; it needs the run length and
  // (FC worker 0) the test set.
  STRATA_ASSIGN_OR_RETURN(auto data, LoadTrainingData(config, 0, 1, options.run.train_limit));
  const int64_t total_steps = data->total_steps;
  const int64_t steps_per_epoch = data->steps_per_epoch;
  auto local_optimizer =
      [&](std::vector<Parameter*> params) -> absl::StatusOr<std::unique_ptr<ParameterOptimizer>> {
    STRATA_ASSIGN_OR_RETURN(auto optimizer, Optimizer::Create(config.optimizer));
    return std::make_unique<ParameterOptimizer>(
        std::move(optimizer), LrSchedule(config.schedule, config.optimizer.lr, total_steps),
        std::move(params));
  };
  // Updates what never leaves this process: the whole head (one FC worker)
  // or our experts (several).
  std::unique_ptr<ParameterOptimizer> local_update;
  int64_t servers_version = 0;
  if (shared_head) {
    STRATA_ASSIGN_OR_RETURN(servers_version, sync.Join(/*initialise=*/rank == 0));
    if (expert_parallel) {
      STRATA_ASSIGN_OR_RETURN(local_update, local_optimizer(experts->owned_parameters()));
    }
  } else {
    STRATA_ASSIGN_OR_RETURN(local_update, local_optimizer(model->parameters(split, -1)));
  }
  std::unique_ptr<FcCheckpoints> checkpoints;
  if (!fc_options.checkpoint_dir.empty()) {
    checkpoints = std::make_unique<FcCheckpoints>(
        fc_options.checkpoint_dir, fc_options.checkpoint_every, rank, *model, local_update.get());
  }
  // Where we start: the restored epoch, which the servers' shared head (if
  // any) must be at too; else the beginning.
  int64_t first_iteration = 0;
  if (fc_options.restore) {
    if (checkpoints == nullptr)
      return absl::InvalidArgumentError("--restore needs --checkpoint-dir");
    STRATA_ASSIGN_OR_RETURN(first_iteration, checkpoints->Restore(client->map().checkpoint_epoch));
  }
  if (shared_head && servers_version != first_iteration) {
    return absl::FailedPreconditionError(
        absl::StrCat("the servers' head is at iteration ", servers_version,
                     ", we start at iteration ", first_iteration,
                     fc_options.restore ? " (restore every role from the same checkpoint epoch)"
                                        : "; start the job afresh, or every role with --restore"));
  }

  STRATA_ASSIGN_OR_RETURN(MetricsWriter metrics,
                          MetricsWriter::Open(rank == 0 ? options.run.metrics_out : ""));
  STRATA_ASSIGN_OR_RETURN(MetricsWriter records, MetricsWriter::Open(options.run.records_out));
  TrainingReporter reporter(tc, total_steps, steps_per_epoch,
                            absl::StrCat("[fc worker ", rank, "] "),
                            options.run.progress && rank == 0, &metrics);
  RunSummary summary = NewRunSummary("stanza", config, *model);
  FcProgram::Parts parts{
      *model,   split, server,           *client, sync, experts.get(), local_update.get(),
      reporter, *data, checkpoints.get()};
  STRATA_ASSIGN_OR_RETURN(const FcBatching batching, ParseFcBatching(config.cluster.fc_batching));
  if (expert_parallel && batching != FcBatching::kGathered) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster.fc_batching ", config.cluster.fc_batching, ": the MoE experts are split over ",
        fc_workers, " FC workers, whose exchanges pair one batch of each; use gathered"));
  }
  FcProgram program(options, rank, static_cast<double>(mine.size()), fc_workers, shared_head,
                    expert_parallel, batching, parts);
  StepLoopOptions loop_options;
  loop_options.device = options.device;
  loop_options.process = absl::StrCat("fc worker ", rank);
  loop_options.first_iteration = first_iteration;
  loop_options.total_iterations = total_steps;
  loop_options.records = &records;
  loop_options.reporter = &reporter;
  ClusterHooks hooks(*client);
  STRATA_RETURN_IF_ERROR(hooks.DeclareWireFormat(config.cluster.wire_format));
  STRATA_RETURN_IF_ERROR(hooks.DeclareBatchShares(
      config.cluster.batch_shares, tc.batch_size, conv_workers,
      [&server](const std::vector<int64_t>& rows) { server.TakeRows(rows); }));
  if (expert_parallel) {
    experts->DeclareKnobs(hooks.knobs());
  } else {
    hooks.knobs().Declare(kFcBatchingKnob, config.cluster.fc_batching,
                          [&program](const std::string& value) -> absl::Status {
                            STRATA_ASSIGN_OR_RETURN(const FcBatching b, ParseFcBatching(value));
                            program.set_batching(b);
                            return absl::OkStatus();
                          });
  }
  hooks.Attach(&loop_options);
  StepLoop loop(loop_options);
  server.set_wait_observer(loop.waits());
  client->set_wait_observer(loop.waits());
  model->set_wait_observer(loop.waits());
  if (experts != nullptr) experts->set_wait_observer(loop.waits());
  STRATA_RETURN_IF_ERROR(hooks.Run(loop, program).status());
  client->set_wait_observer(nullptr);
  model->set_wait_observer(nullptr);
  if (experts != nullptr) experts->set_wait_observer(nullptr);

  server.ServeUntilDone(total_steps, options.client.timeout);
  if (checkpoints != nullptr) checkpoints->Flush(client->membership());
  reporter.Finish(total_steps, &summary);
  summary.device_peak_memory_bytes = backend->PeakMemoryBytes();
  if (expert_parallel) {  // every expert back in every FC worker, to write the model
    STRATA_RETURN_IF_ERROR_CTX(experts->Leave(), "gathering the MoE experts");
  }
  if (rank == 0 && !options.parameters_out.empty()) {
    STRATA_RETURN_IF_ERROR_CTX(PullTrunk(sync, total_steps), "pulling the final trunk");
    STRATA_RETURN_IF_ERROR(
        WriteCheckpoint(options.parameters_out, CaptureParameters(*model, total_steps)));
  }
  if (rank == 0 && !options.run.summary_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(options.run.summary_out, summary.ToJson()));
  }
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  TrafficReport traffic;
  traffic.process = absl::StrCat("fc worker ", rank);
  traffic.steps = total_steps;
  traffic.AddSent(PeerKind::kServer, client->bytes_sent());
  traffic.AddReceived(PeerKind::kServer, client->bytes_received());
  traffic.AddSent(PeerKind::kConv, socket->bytes_sent());
  traffic.AddReceived(PeerKind::kConv, socket->bytes_received());
  if (experts != nullptr) {
    traffic.AddSent(PeerKind::kFc, experts->bytes_sent());
    traffic.AddReceived(PeerKind::kFc, experts->bytes_received());
  }
  traffic.Print();
  LogInfo("finished (%llu requests refused)", static_cast<unsigned long long>(server.refused()));
  return summary;
}

}  // namespace strata
