// strata_fc_worker: an FC worker of stanza mode (the head of the model).
//
//   strata_fc_worker --rank F --coordinator tcp://HOST:PORT --config job.json \
//       [--bind tcp://HOST:0] [--threads T] [--summary-out s.json] [--metrics-out m.jsonl]
//
// FC worker 0 prints progress, evaluates after every epoch and writes the
// summary.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/status.h"
#include "core/util/flag_names.h"
#include "core/util/process_setup.h"
#include "fc_workers/fc_worker.h"

ABSL_FLAG(int32_t, rank, 0, "FC worker rank in [0, fc_workers)");
ABSL_FLAG(std::string, coordinator, "", "coordinator address (required)");
ABSL_FLAG(std::string, config, "", "job config JSON file (required)");
ABSL_FLAG(std::string, bind, "tcp://127.0.0.1:0",
          "where conv workers reach this FC worker (tcp port 0: any; ipc://*: a Unix socket)");
ABSL_FLAG(uint64_t, job_id, 1, "job id");
ABSL_FLAG(int64_t, threads, 0, "CPU threads (overrides training.threads)");
ABSL_FLAG(int64_t, epochs, 0, "epochs (overrides training.epochs)");
ABSL_FLAG(int64_t, max_steps, 0, "steps (overrides training.max_steps)");
ABSL_FLAG(int64_t, batch_size, 0, "global batch size (overrides training.batch_size)");
ABSL_FLAG(int64_t, seed, -1, "seed (overrides training.seed)");
ABSL_FLAG(bool, evaluate, true, "FC worker 0 evaluates after every epoch");
ABSL_FLAG(double, timeout, 60.0, "seconds to wait for conv workers or servers before failing");
ABSL_FLAG(int64_t, chunk_elements, strata::kDefaultChunkElements, "must match the servers'");
ABSL_FLAG(std::string, summary_out, "", "FC worker 0: summary JSON");
ABSL_FLAG(std::string, metrics_out, "", "FC worker 0: metrics JSON lines");
ABSL_FLAG(std::string, parameters_out, "", "FC worker 0: final parameters (checkpoint format)");
ABSL_FLAG(bool, progress, true, "FC worker 0 shows progress on stderr");

namespace strata {
namespace {

absl::Status Run() {
  FcWorkerOptions o;
  const std::string path = absl::GetFlag(FLAGS_config);
  if (path.empty()) return absl::InvalidArgumentError("--config is required");
  STRATA_ASSIGN_OR_RETURN(o.config, LoadJobConfig(path));
  TrainingConfig& tc = o.config.training;
  if (absl::GetFlag(FLAGS_threads) > 0) tc.threads = absl::GetFlag(FLAGS_threads);
  if (absl::GetFlag(FLAGS_epochs) > 0) tc.epochs = absl::GetFlag(FLAGS_epochs);
  if (absl::GetFlag(FLAGS_max_steps) > 0) tc.max_steps = absl::GetFlag(FLAGS_max_steps);
  if (absl::GetFlag(FLAGS_batch_size) > 0) tc.batch_size = absl::GetFlag(FLAGS_batch_size);
  if (absl::GetFlag(FLAGS_seed) >= 0) tc.seed = absl::GetFlag(FLAGS_seed);
  tc.evaluate = absl::GetFlag(FLAGS_evaluate);
  o.client.coordinator = absl::GetFlag(FLAGS_coordinator);
  o.client.rank = absl::GetFlag(FLAGS_rank);
  o.client.job_id = absl::GetFlag(FLAGS_job_id);
  o.client.timeout = absl::Seconds(absl::GetFlag(FLAGS_timeout));
  o.bind = absl::GetFlag(FLAGS_bind);
  o.chunk_elements = absl::GetFlag(FLAGS_chunk_elements);
  o.run.summary_out = absl::GetFlag(FLAGS_summary_out);
  o.run.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  o.run.progress = absl::GetFlag(FLAGS_progress);
  o.parameters_out = absl::GetFlag(FLAGS_parameters_out);
  return RunFcWorker(o).status();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::ConfigureProcessAllocator();
  absl::SetProgramUsageMessage(
      "Strata FC worker (stanza mode).\n  strata_fc_worker --rank F --coordinator "
      "tcp://HOST:PORT --config JOB.json");
  strata::NormalizedArgs args(argc, argv);
  absl::ParseCommandLine(args.argc(), args.argv());
  absl::Status status = strata::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "strata_fc_worker: error: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
