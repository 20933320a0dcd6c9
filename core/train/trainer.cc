#include "core/train/trainer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "core/layers/softmax_cross_entropy.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"

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
                      {"device", device},
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
  if (device_peak_memory_bytes.has_value()) {
    j["device_peak_memory_bytes"] = *device_peak_memory_bytes;
  }
  return j;
}

RunSummary NewRunSummary(const std::string& mode, const JobConfig& config, const Model& model) {
  RunSummary summary;
  summary.mode = mode;
  summary.config = config.source;
  summary.batch_size = config.training.batch_size;
  summary.threads = CpuThreads();
  summary.device = model.backend().name();
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
  o.crop_padding = 0;  // test images as they are
  o.horizontal_flip = false;
  BatchLoader loader(dataset, o);
  loader.StartEpoch(0);
  const int64_t total = limit > 0 ? std::min(limit, dataset.size()) : dataset.size();
  EvalResult result;
  double loss_sum = 0.0;
  int64_t correct = 0;
  // A batch's totals are read once the next batch is queued, so that a
  // device computes while the host waits for them.
  std::optional<std::pair<LossResult, int64_t>> previous;
  auto add_previous = [&]() -> absl::Status {
    if (!previous.has_value()) return absl::OkStatus();
    STRATA_ASSIGN_OR_RETURN(const double batch_loss, previous->first.loss.Get());
    STRATA_ASSIGN_OR_RETURN(const int64_t batch_correct, previous->first.correct.Get());
    loss_sum += batch_loss * static_cast<double>(previous->second);
    correct += batch_correct;
    previous.reset();
    return absl::OkStatus();
  };
  for (int64_t step = 0; result.samples < total; ++step) {
    Batch batch = loader.Get(step);
    const int64_t take = std::min<int64_t>(batch.images.dim(0), total - result.samples);
    STRATA_ASSIGN_OR_RETURN(Tensor images, ToDevice(model.backend(), batch.images.Slice(0, take)));
    batch.labels.resize(take);
    Tensor logits = model.Forward(images, /*training=*/false);
    STRATA_ASSIGN_OR_RETURN(LossResult loss, SoftmaxCrossEntropy(logits, batch.labels, false));
    STRATA_RETURN_IF_ERROR(add_previous());
    previous.emplace(std::move(loss), take);
    result.samples += take;
  }
  STRATA_RETURN_IF_ERROR(add_previous());
  if (result.samples > 0) {
    result.accuracy = static_cast<double>(correct) / static_cast<double>(result.samples);
    result.loss = loss_sum / static_cast<double>(result.samples);
  }
  return result;
}

}  // namespace strata
