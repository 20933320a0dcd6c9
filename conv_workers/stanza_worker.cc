#include "conv_workers/stanza_worker.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "conv_workers/parameter_sync.h"
#include "core/data/batch_loader.h"
#include "core/model/model.h"
#include "core/net/fc_link.h"
#include "core/net/traffic.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

namespace strata {

absl::Status RunStanzaConvWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  const int split = model->split_index();
  if (split == model->num_layers()) {
    return absl::InvalidArgumentError("stanza mode needs model.split_after in the job config");
  }
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  const int rank = client->rank();
  const int workers = client->num_workers();
  if (client->fc_addresses().empty()) {
    return absl::FailedPreconditionError("the cluster map lists no FC workers (stanza mode)");
  }
  if (tc.batch_size % workers != 0) {
    return absl::InvalidArgumentError(absl::StrCat("training.batch_size ", tc.batch_size,
                                                   " is not divisible by the ", workers,
                                                   " conv workers"));
  }
  ParameterSync sync(*client, *model, 0, split);
  STRATA_RETURN_IF_ERROR(client->SetPlan(
      PartitionPlan::Build(sync.sizes(), client->num_servers(), options.chunk_elements)));
  const int fc_rank = rank % static_cast<int>(client->fc_addresses().size());
  FcLinkOptions lo;
  lo.address = client->fc_addresses()[fc_rank];
  lo.fc_rank = fc_rank;
  lo.conv_rank = rank;
  lo.job_id = options.client.job_id;
  lo.timeout = options.client.timeout;
  STRATA_ASSIGN_OR_RETURN(auto link, FcLink::Connect(lo));
  const std::string prefix = absl::StrCat("[worker ", rank, "] ");

  STRATA_ASSIGN_OR_RETURN(
      DataSplits data, LoadDataSplits(config.data, config.model.input, config.model.classes,
                                      static_cast<uint64_t>(tc.seed)));
  if (options.run.train_limit > 0 && options.run.train_limit < data.train.size()) {
    data.train.labels.resize(options.run.train_limit);
    data.train.pixels.resize(options.run.train_limit * data.train.sample_shape.numel());
  }
  BatchLoaderOptions bo;
  bo.global_batch = tc.batch_size;
  bo.rank = rank;
  bo.world = workers;
  bo.seed = static_cast<uint64_t>(tc.seed);
  bo.mean = config.data.mean;
  bo.std = config.data.std;
  BatchLoader loader(data.train, bo);
  const int64_t steps_per_epoch = loader.steps_per_epoch();
  if (steps_per_epoch == 0) {
    return absl::InvalidArgumentError("the training set is smaller than one global batch");
  }
  const int64_t total_steps = TotalTrainingSteps(tc, data.train.size());

  STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
  const int64_t first_step = step;
  int64_t loaded_epoch = -1;
  while (step < total_steps) {
    const int64_t epoch = step / steps_per_epoch;
    if (epoch != loaded_epoch) {
      loader.StartEpoch(epoch);
      loaded_epoch = epoch;
    }
    Batch batch = loader.Get(step % steps_per_epoch);
    Tensor activations = model->Forward(batch.images, /*training=*/true, 0, split);
    STRATA_ASSIGN_OR_RETURN(Tensor grad, link->Exchange(step, activations, batch.labels));
    model->Backward(grad, 0, split, false, sync.AfterLayer(step));
    absl::Status exchanged = sync.Finish();
    if (absl::IsAborted(exchanged)) {
      std::fprintf(stderr, "%s%s\n", prefix.c_str(), std::string(exchanged.message()).c_str());
      STRATA_ASSIGN_OR_RETURN(step, sync.Rejoin());
      std::fprintf(stderr, "%srewound to iteration %lld\n", prefix.c_str(),
                   static_cast<long long>(step));
      loaded_epoch = -1;
      continue;
    }
    STRATA_RETURN_IF_ERROR_CTX(exchanged, absl::StrCat("iteration ", step));
    ++step;
  }
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  TrafficReport traffic;
  traffic.process = absl::StrCat("worker ", rank);
  traffic.steps = step - first_step;
  traffic.AddSent(PeerKind::kServer, client->bytes_sent());
  traffic.AddReceived(PeerKind::kServer, client->bytes_received());
  traffic.AddSent(PeerKind::kFc, link->counters().bytes_sent);
  traffic.AddReceived(PeerKind::kFc, link->counters().bytes_received);
  traffic.Print();
  return absl::OkStatus();
}

}  // namespace strata
