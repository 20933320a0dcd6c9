#include "conv_workers/stanza_worker.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conv_workers/worker_traffic.h"
#include "core/data/training_data.h"
#include "core/model/model.h"
#include "core/net/fc_link.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/train/metrics_writer.h"
#include "core/util/log.h"
#include "runtime/cluster_hooks.h"
#include "runtime/device_backend.h"
#include "runtime/parameter_sync.h"
#include "runtime/step_loop.h"

namespace strata {
namespace {

// The trunk on this worker's shard: forward to the split, the boundary
// activations to the FC worker and its gradients back, backward with the
// trunk's pushes overlapped.
class StanzaConvProgram final : public StepProgram {
 public:
  StanzaConvProgram(TrainingData& data, Model& model, int split, PsClient& client,
                    ParameterSync& sync, FcLink& link)
      : data_(data), model_(model), split_(split), client_(client), sync_(sync), link_(link) {}

  absl::Status Load(StepContext& ctx) override {
    batch_ = data_.batches->ForStep(ctx.iteration, slice_);
    ctx.rows = static_cast<int64_t>(batch_.labels.size());
    return absl::OkStatus();
  }
  // From the next Load on, our slice of each global batch when rank r
  // takes rows[r] (the FC worker weights the gradients it answers with).
  void TakeShare(const std::vector<int64_t>& rows, int rank) { slice_ = SliceOfRank(rows, rank); }
  absl::Status Forward(StepContext&) override {
    STRATA_ASSIGN_OR_RETURN(const Tensor images, ToDevice(model_.backend(), batch_.images));
    activations_ = model_.Forward(images, /*training=*/true, 0, split_);
    return absl::OkStatus();
  }
  // The link sends and receives host tensors: a model on a device copies
  // its activations down and the gradients up.
  absl::Status Exchange(StepContext& ctx) override {
    STRATA_ASSIGN_OR_RETURN(const Tensor sent, ToHost(activations_));
    STRATA_ASSIGN_OR_RETURN(const Tensor received,
                            link_.Exchange(ctx.iteration, sent, batch_.labels));
    STRATA_ASSIGN_OR_RETURN(grad_, ToDevice(model_.backend(), received));
    return absl::OkStatus();
  }
  absl::Status Backward(StepContext& ctx) override {
    model_.Backward(grad_, 0, split_, false, sync_.AfterLayer(ctx.iteration));
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Synchronise(StepContext& ctx) override {
    ctx.rewind_to = ctx.iteration;
    return sync_.CompleteOrRewind(&ctx.rewind_to);
  }
  TrafficTotals Traffic() const override {
    TrafficTotals t;
    t.sent[static_cast<int>(PeerKind::kServer)] = client_.bytes_sent();
    t.received[static_cast<int>(PeerKind::kServer)] = client_.bytes_received();
    t.sent[static_cast<int>(PeerKind::kFc)] = link_.bytes_sent();
    t.received[static_cast<int>(PeerKind::kFc)] = link_.bytes_received();
    return t;
  }

 private:
  TrainingData& data_;
  Model& model_;
  int split_;
  PsClient& client_;
  ParameterSync& sync_;
  FcLink& link_;
  std::optional<BatchSlice> slice_;  // unset: the loader's even share
  Batch batch_;
  Tensor activations_;
  Tensor grad_;
};

}  // namespace

absl::Status RunStanzaConvWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(const DeviceSpec device, ParseDeviceSpec(tc.device));
  STRATA_ASSIGN_OR_RETURN(const Backend* backend, OpenDevice(device, tc.tf32));
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(tc.seed), *backend));
  STRATA_RETURN_IF_ERROR(model->RequireSplit());
  const int split = model->split_index();
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  const int rank = client->rank();
  SetLogProcess(absl::StrCat("worker ", rank));
  if (client->map().fc_addresses.empty()) {
    return absl::FailedPreconditionError("the cluster map lists no FC workers (stanza mode)");
  }
  STRATA_ASSIGN_OR_RETURN(
      const KeyLayout layout,
      KeyLayoutFor(*model, "stanza", static_cast<int>(client->map().fc_addresses.size())));
  ParameterSync sync(client->kv(), *model, ServerKeys(*model, layout), KeyOwner::kConvWorkers);
  STRATA_RETURN_IF_ERROR(client->kv().SetPlan(
      PartitionPlan::Build(sync.plan_sizes(), client->kv().num_servers(), options.chunk_elements)));
  const int fc_rank = rank % static_cast<int>(client->map().fc_addresses.size());
  FcLinkOptions lo;
  lo.address = client->map().fc_addresses[fc_rank];
  lo.fc_rank = fc_rank;
  lo.conv_rank = rank;
  lo.credentials = options.client.credentials;
  lo.timeout = options.client.timeout;
  lo.decorate_channel = options.client.decorate_channel;
  STRATA_ASSIGN_OR_RETURN(auto link, FcLink::Connect(lo));

  STRATA_ASSIGN_OR_RETURN(
      auto data, LoadTrainingData(config, rank, client->map().num_workers, options.run.train_limit));
  STRATA_ASSIGN_OR_RETURN(MetricsWriter records, MetricsWriter::Open(options.run.records_out));
  STRATA_ASSIGN_OR_RETURN(const int64_t first_step, sync.Join(/*initialise=*/rank == 0));

  StanzaConvProgram program(*data, *model, split, *client, sync, *link);
  StepLoopOptions loop_options;
  loop_options.device = options.device;
  loop_options.process = absl::StrCat("conv worker ", rank);
  loop_options.first_iteration = first_step;
  loop_options.total_iterations = data->total_steps;
  loop_options.records = &records;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Controller> controller,
                          MakeController(options.controller, rank));
  ClusterHooks hooks(*client, std::move(controller));
  STRATA_RETURN_IF_ERROR(hooks.DeclareWireFormat(config.cluster.wire_format, link.get()));
  STRATA_RETURN_IF_ERROR(hooks.DeclareBatchShares(
      config.cluster.batch_shares, tc.batch_size, client->map().num_workers,
      [&program, rank](const std::vector<int64_t>& rows) { program.TakeShare(rows, rank); }));
  hooks.Attach(&loop_options);
  StepLoop loop(loop_options);
  client->set_wait_observer(loop.waits());
  link->set_wait_observer(loop.waits());
  model->set_wait_observer(loop.waits());
  STRATA_ASSIGN_OR_RETURN(const int64_t step, hooks.Run(loop, program));
  client->set_wait_observer(nullptr);
  model->set_wait_observer(nullptr);
  link->Finish();

  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  PrintConvWorkerTraffic(rank, step - first_step, *client, link.get(), loop.times());
  return absl::OkStatus();
}

}  // namespace strata
