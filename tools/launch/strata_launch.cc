// strata_launch: runs a training job from a job config.
//
//   strata_launch --config configs/fashion_mnist.json --mode single --epochs 1
//
// Flags override the config's fields. The run ends with one line
//   final: mode=single test_accuracy=0.9123 images_per_sec=2950
// and, with --summary-out, a summary JSON. Exit status 0 on success, 1 on any
// error (printed as "strata_launch: error: ...").
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "core/model/job_config.h"
#include "core/status.h"
#include "core/train/trainer.h"
#include "core/util/flag_names.h"

ABSL_FLAG(std::string, config, "", "job config JSON file (required)");
ABSL_FLAG(std::string, mode, "", "single (default: the config's cluster.mode)");
ABSL_FLAG(int64_t, epochs, 0, "epochs to train (overrides training.epochs)");
ABSL_FLAG(int64_t, max_steps, 0, "stop after this many steps (overrides training.max_steps)");
ABSL_FLAG(int64_t, batch_size, 0, "global batch size (overrides training.batch_size)");
ABSL_FLAG(int64_t, threads, 0, "CPU threads per process (overrides training.threads)");
ABSL_FLAG(int64_t, seed, -1, "random seed (overrides training.seed)");
ABSL_FLAG(bool, evaluate, true, "evaluate on the test set after every epoch");
ABSL_FLAG(std::string, metrics_out, "", "write metrics as JSON lines to this file");
ABSL_FLAG(std::string, summary_out, "", "write the summary JSON to this file");
ABSL_FLAG(std::string, checkpoint, "",
          "checkpoint file (written at the end and every --checkpoint-every steps)");
ABSL_FLAG(int64_t, checkpoint_every, 0, "steps between checkpoints (0: only at the end)");
ABSL_FLAG(bool, restore, false, "resume from --checkpoint");
ABSL_FLAG(bool, progress, true, "show the progress line on stderr");

namespace strata {
namespace {

absl::StatusOr<JobConfig> ConfigFromFlags() {
  const std::string path = absl::GetFlag(FLAGS_config);
  if (path.empty()) return absl::InvalidArgumentError("--config is required");
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(path));
  if (!absl::GetFlag(FLAGS_mode).empty()) config.cluster.mode = absl::GetFlag(FLAGS_mode);
  if (absl::GetFlag(FLAGS_epochs) > 0) config.training.epochs = absl::GetFlag(FLAGS_epochs);
  if (absl::GetFlag(FLAGS_max_steps) > 0)
    config.training.max_steps = absl::GetFlag(FLAGS_max_steps);
  if (absl::GetFlag(FLAGS_batch_size) > 0)
    config.training.batch_size = absl::GetFlag(FLAGS_batch_size);
  if (absl::GetFlag(FLAGS_threads) > 0) config.training.threads = absl::GetFlag(FLAGS_threads);
  if (absl::GetFlag(FLAGS_seed) >= 0) config.training.seed = absl::GetFlag(FLAGS_seed);
  config.training.evaluate = absl::GetFlag(FLAGS_evaluate);
  return config;
}

absl::Status Run() {
  STRATA_ASSIGN_OR_RETURN(JobConfig config, ConfigFromFlags());
  if (config.cluster.mode != "single") {
    return absl::UnimplementedError(absl::StrFormat(
        "--mode %s: this build runs only --mode single (the parameter-server modes ps and "
        "stanza are not built yet)",
        config.cluster.mode));
  }
  RunOptions options;
  options.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  options.summary_out = absl::GetFlag(FLAGS_summary_out);
  options.checkpoint_path = absl::GetFlag(FLAGS_checkpoint);
  options.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  options.restore = absl::GetFlag(FLAGS_restore);
  options.progress = absl::GetFlag(FLAGS_progress);
  if (options.restore && options.checkpoint_path.empty()) {
    return absl::InvalidArgumentError("--restore needs --checkpoint");
  }
  STRATA_ASSIGN_OR_RETURN(RunSummary summary, TrainSingle(config, options));
  std::printf("final: mode=%s test_accuracy=%.4f images_per_sec=%.0f\n", summary.mode.c_str(),
              summary.test_accuracy, summary.images_per_sec);
  std::fflush(stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Runs a Strata training job.\n  strata_launch --config JOB.json [--mode single] "
      "[--epochs E] [--max-steps K] [--threads T] [--seed S] [--metrics-out m.jsonl] "
      "[--summary-out s.json]");
  strata::NormalizedArgs args(argc, argv);
  absl::ParseCommandLine(args.argc(), args.argv());
  absl::Status status = strata::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "strata_launch: error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
