#include "tools/bench/train_check.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/data/training_data.h"
#include "core/layers/softmax_cross_entropy.h"
#include "core/model/model.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {
namespace {

constexpr double kLossTolerance = 1e-4;  // relative; float32 forward in another order

// int64 parameter floats P, int64 batch B, then P floats (the parameters in
// model order, Strata's layouts), B images (NHWC, normalised), B int32 labels.
absl::Status WriteCheckInputs(const std::string& path, Model& model, const Batch& batch) {
  std::ofstream out(path, std::ios::binary);
  const int64_t params = model.num_parameter_elements();
  const int64_t n = batch.images.dim(0);
  out.write(reinterpret_cast<const char*>(&params), sizeof(params));
  out.write(reinterpret_cast<const char*>(&n), sizeof(n));
  for (const Parameter* p : model.parameters()) {
    out.write(reinterpret_cast<const char*>(p->value.data()), p->value.nbytes());
  }
  out.write(reinterpret_cast<const char*>(batch.images.data()), batch.images.nbytes());
  out.write(reinterpret_cast<const char*>(batch.labels.data()),
            static_cast<std::streamsize>(batch.labels.size() * sizeof(int32_t)));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<nlohmann::json> CheckPeerComputesTheSame(const JobConfig& config,
                                                        const TrainCheckOptions& o) {
  SetCpuThreads(o.threads);
  STRATA_ASSIGN_OR_RETURN(auto model,
                          Model::Build(config.model, static_cast<uint64_t>(config.training.seed)));
  JobConfig one_batch = config;
  one_batch.training.batch_size = o.batch;
  STRATA_ASSIGN_OR_RETURN(auto data, LoadTrainingData(one_batch, 0, 1, o.batch));
  const Batch batch = data->loader->ForStep(0);
  Tensor logits = model->Forward(batch.images, /*training=*/false);
  STRATA_ASSIGN_OR_RETURN(LossResult first, SoftmaxCrossEntropy(logits, batch.labels, false));
  STRATA_ASSIGN_OR_RETURN(const double first_loss, first.loss.Get());

  const std::string inputs = o.scratch + "/check_inputs.bin";
  const std::string result = o.scratch + "/check.json";
  STRATA_RETURN_IF_ERROR(WriteCheckInputs(inputs, *model, batch));
  ProcessSpec spec;
  spec.argv = {o.python,         SourceDir() + "/tools/bench/peers/torch_train.py",
               "--config",       o.config_path,
               "--threads",      std::to_string(o.threads),
               "--check-inputs", inputs,
               "--json",         result};
  spec.unset_env = UnsetForBenchmarks();
  spec.set_env = PeerEnvironment(o.threads);
  spec.output_path = o.scratch + "/check.log";
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, absl::Minutes(5)));
  if (code != 0) {
    return absl::InternalError(absl::StrCat("the PyTorch peer's check exited with status ", code,
                                            ":\n", FileTail(spec.output_path, 2000)));
  }
  STRATA_ASSIGN_OR_RETURN(nlohmann::json peer,
                          ReadContenderResult(result, "parameters", "pytorch", spec.output_path));
  const int64_t strata_params = model->num_parameter_elements();
  const int64_t peer_params = peer["parameters"].get<int64_t>();
  nlohmann::json report = {{"parameters", {{"strata", strata_params}, {"pytorch", peer_params}}}};
  if (peer_params != strata_params) {
    return absl::FailedPreconditionError(absl::StrCat("the PyTorch peer's model has ", peer_params,
                                                      " parameters, Strata's ", strata_params,
                                                      ": they would not train the same model"));
  }
  const double peer_loss = peer["first_loss"].get<double>();
  const double diff = std::fabs(peer_loss - first_loss) / std::max(1e-30, std::fabs(first_loss));
  report["first_loss"] = {
      {"strata", first_loss}, {"pytorch", peer_loss}, {"relative_difference", diff}};
  std::printf(
      "same computation: %lld parameters each; first-batch loss from the same weights %.6f "
      "(strata) and %.6f (pytorch), relative difference %.1e\n",
      static_cast<long long>(strata_params), first_loss, peer_loss, diff);
  if (!(diff <= kLossTolerance)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "from the same weights, the PyTorch peer's first-batch loss is %.6f and Strata's %.6f "
        "(relative difference %.2e, at most %.0e is the same computation)",
        peer_loss, first_loss, diff, kLossTolerance));
  }
  return report;
}

}  // namespace strata::bench
