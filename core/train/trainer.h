// What every training run shares, whatever its mode: the run's options, its
// summary, and evaluation on the test set. The loops themselves run on the
// worker runtime (runtime/step_loop.h; single-process training:
// runtime/single_trainer.h).
#ifndef STRATA_CORE_TRAIN_TRAINER_H_
#define STRATA_CORE_TRAIN_TRAINER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/data/batch_loader.h"
#include "core/data/dataset.h"
#include "core/model/job_config.h"
#include "core/model/model.h"

namespace strata {

struct RunOptions {
  std::string metrics_out;       // JSON lines; "" = none
  std::string summary_out;       // summary JSON; "" = none
  std::string checkpoint_path;   // "" = no checkpoints
  int64_t checkpoint_every = 0;  // steps between checkpoints (0 = only at the end)
  bool restore = false;          // resume from checkpoint_path
  int64_t train_limit = 0;       // use the first N training images only (0 = all)
  int64_t eval_limit = 0;        // evaluate on the first N test images only (0 = all)
  bool progress = true;          // progress line on stderr
  std::string parameters_out;    // final parameters as a checkpoint file; "" = none
  std::string records_out;       // one JSON line per iteration of this process; "" = none
};

// What a run reports; ToJson() is the summary file.
struct RunSummary {
  std::string mode;
  std::string config;
  int64_t steps = 0;
  int64_t epochs = 0;
  int64_t batch_size = 0;
  int64_t threads = 0;
  std::string device;  // the backend the model computed on ("cpu", "cuda", "check")
  int64_t parameters = 0;
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  double train_loss = 0.0;      // mean loss over the last epoch's steps
  double images_per_sec = 0.0;  // training images / training seconds
  double train_seconds = 0.0;   // time in training steps (no start-up, no evaluation)
  double forward_flops_per_image = 0.0;
  // Cluster modes: bytes sent per iteration by every process together, and
  // by role ("servers", "conv_workers", "fc_workers"); 0 in single mode.
  double bytes_per_iteration = 0.0;
  std::map<std::string, double> bytes_per_iteration_by_role;
  // Cluster modes: a conv worker's iteration, in seconds, averaged over the
  // conv workers: "compute" (forward, backward), "communication" (blocked on
  // the network: pushes, pulls, activation exchange) and "waiting" (the
  // rest: input loading, scheduling). Empty in single mode.
  std::map<std::string, double> seconds_per_iteration;
  // Single mode on a device with memory of its own: the most bytes its
  // tensors held at once (Backend::PeakMemoryBytes).
  std::optional<uint64_t> device_peak_memory_bytes;

  nlohmann::json ToJson() const;
};

// A summary with the run's fixed facts filled in: mode, config file, batch,
// threads, parameter count and forward FLOPs per image.
RunSummary NewRunSummary(const std::string& mode, const JobConfig& config, const Model& model);

struct EvalResult {
  double accuracy = 0.0;
  double loss = 0.0;
  int64_t samples = 0;
};

// Accuracy and mean loss of `model` on the first `limit` samples of
// `dataset` (all when 0), in evaluation mode.
absl::StatusOr<EvalResult> Evaluate(Model& model, const Dataset& dataset,
                                    const BatchLoaderOptions& normalization, int64_t limit);

}  // namespace strata

#endif  // STRATA_CORE_TRAIN_TRAINER_H_
