#include "conv_workers/stanza_worker.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "conv_workers/worker_traffic.h"
#include "core/data/training_data.h"
#include "core/model/model.h"
#include "core/net/fc_link.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "runtime/parameter_sync.h"

namespace strata {

absl::Status RunStanzaConvWorker(const WorkerOptions& options) {
  const JobConfig& config = options.config;
  const TrainingConfig& tc = config.training;
  SetCpuThreads(static_cast<int>(tc.threads));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, static_cast<uint64_t>(tc.seed)));
  STRATA_RETURN_IF_ERROR(model->RequireSplit());
  const int split = model->split_index();
  STRATA_ASSIGN_OR_RETURN(auto client, PsClient::Connect(options.client));
  const int rank = client->rank();
  const int workers = client->num_workers();
  if (client->fc_addresses().empty()) {
    return absl::FailedPreconditionError("the cluster map lists no FC workers (stanza mode)");
  }
  STRATA_ASSIGN_OR_RETURN(
      const KeyLayout layout,
      KeyLayoutFor(*model, "stanza", static_cast<int>(client->fc_addresses().size())));
  ParameterSync sync(*client, *model, ServerKeys(*model, layout), KeyOwner::kConvWorkers);
  STRATA_RETURN_IF_ERROR(client->SetPlan(
      PartitionPlan::Build(sync.plan_sizes(), client->num_servers(), options.chunk_elements)));
  const int fc_rank = rank % static_cast<int>(client->fc_addresses().size());
  FcLinkOptions lo;
  lo.address = client->fc_addresses()[fc_rank];
  lo.fc_rank = fc_rank;
  lo.conv_rank = rank;
  lo.credentials = options.client.credentials;
  lo.timeout = options.client.timeout;
  STRATA_ASSIGN_OR_RETURN(auto link, FcLink::Connect(lo));
  const std::string prefix = absl::StrCat("[worker ", rank, "] ");

  STRATA_ASSIGN_OR_RETURN(auto data,
                          LoadTrainingData(config, rank, workers, options.run.train_limit));
  BatchLoader& loader = *data->loader;
  const int64_t total_steps = data->total_steps;

  STRATA_ASSIGN_OR_RETURN(int64_t step, sync.Join(/*initialise=*/rank == 0));
  const int64_t first_step = step;
  StepTimes times;
  while (step < total_steps) {
    const double t0 = MonotonicSeconds();
    Batch batch = loader.ForStep(step);
    const double t1 = MonotonicSeconds();
    Tensor activations = model->Forward(batch.images, /*training=*/true, 0, split);
    const double t2 = MonotonicSeconds();
    STRATA_ASSIGN_OR_RETURN(Tensor grad, link->Exchange(step, activations, batch.labels));
    const double t3 = MonotonicSeconds();
    model->Backward(grad, 0, split, false, sync.AfterLayer(step));
    const double t4 = MonotonicSeconds();
    STRATA_ASSIGN_OR_RETURN(const bool completed, sync.CompleteOrRewind(&step, prefix));
    const double t5 = MonotonicSeconds();
    if (step > first_step) times.Add((t2 - t1) + (t4 - t3), (t3 - t2) + (t5 - t4), t5 - t0);
    if (!completed) continue;
    ++step;
  }
  STRATA_RETURN_IF_ERROR_CTX(client->Done(), "reporting completion to the servers");
  PrintConvWorkerTraffic(rank, step - first_step, *client, link.get(), times);
  return absl::OkStatus();
}

}  // namespace strata
