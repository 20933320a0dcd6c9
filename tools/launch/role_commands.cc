#include "tools/launch/role_commands.h"

namespace strata {
namespace {

// `argv` with what every process gets: the job config (or every --job), the
// overrides every process must apply alike, and every process's own flags.
std::vector<std::string> WithJobs(const ClusterLaunchOptions& o, std::vector<std::string> argv) {
  if (!o.job_configs.empty()) {
    for (const std::string& job : o.job_configs) argv.insert(argv.end(), {"--job", job});
  } else {
    argv.insert(argv.end(), {"--config", o.config_path});
  }
  argv.insert(argv.end(), o.override_flags.begin(), o.override_flags.end());
  argv.insert(argv.end(), o.every_process_flags.begin(), o.every_process_flags.end());
  return argv;
}

// What every conv and FC worker gets beyond the job: threads, timeout, the
// workers' flags, and how several jobs share it.
void AddWorkerFlags(const ClusterLaunchOptions& o, std::vector<std::string>& argv) {
  argv.insert(argv.end(), {"--threads", std::to_string(o.threads_per_worker), "--timeout",
                           std::to_string(o.timeout_seconds)});
  argv.insert(argv.end(), o.worker_flags.begin(), o.worker_flags.end());
  if (!o.job_configs.empty()) {
    argv.insert(argv.end(), {"--policy", o.policy});
    if (!o.weights.empty()) argv.insert(argv.end(), {"--weights", o.weights});
  }
}

// Where the roles that own state (servers, FC workers) write their parts
// of each checkpoint epoch, and whether they start from the newest one.
void AddCheckpointFlags(const ClusterLaunchOptions& o, std::vector<std::string>& argv) {
  if (o.checkpoint_dir.empty()) return;
  argv.insert(argv.end(), {"--checkpoint-dir", o.checkpoint_dir, "--checkpoint-every",
                           std::to_string(o.checkpoint_every), "--keep-checkpoints",
                           std::to_string(o.keep_checkpoints)});
  if (o.restore) argv.push_back("--restore");
}

// The reporting process's outputs.
void AddReportingFlags(const ClusterLaunchOptions& o, const std::string& summary_path,
                       std::vector<std::string>& argv) {
  if (!summary_path.empty()) argv.insert(argv.end(), {"--summary-out", summary_path});
  if (!o.metrics_out.empty()) argv.insert(argv.end(), {"--metrics-out", o.metrics_out});
  argv.insert(argv.end(), o.extra_worker_flags.begin(), o.extra_worker_flags.end());
}

}  // namespace

std::vector<std::string> ServerCommand(const ClusterLaunchOptions& o, int rank,
                                       const std::string& coordinator) {
  const bool stanza = o.mode == "stanza";
  std::vector<std::string> argv = WithJobs(
      o, {o.bin_dir + "/strata_server", "--rank", std::to_string(rank), "--coordinator",
          coordinator, "--consistency", o.consistency, "--staleness", std::to_string(o.staleness),
          "--servers", std::to_string(o.servers), "--conv-workers", std::to_string(o.conv_workers),
          "--mode", o.mode, "--fc-workers", std::to_string(stanza ? o.fc_workers : 0),
          "--knob-lead", std::to_string(o.knob_lead)});
  AddCheckpointFlags(o, argv);
  return argv;
}

std::vector<std::string> FcWorkerCommand(const ClusterLaunchOptions& o, int rank,
                                         const std::string& coordinator,
                                         const std::string& summary_path) {
  std::vector<std::string> argv = WithJobs(o, {o.bin_dir + "/strata_fc_worker", "--rank",
                                               std::to_string(rank), "--coordinator", coordinator});
  AddWorkerFlags(o, argv);
  AddCheckpointFlags(o, argv);
  if (rank == 0) AddReportingFlags(o, summary_path, argv);
  return argv;
}

std::vector<std::string> ConvWorkerCommand(const ClusterLaunchOptions& o, int rank,
                                           const std::string& coordinator,
                                           const std::string& summary_path) {
  std::vector<std::string> argv =
      WithJobs(o, {o.bin_dir + "/strata_conv_worker", "--mode", o.mode, "--coordinator",
                   coordinator, "--rank", std::to_string(rank)});
  AddWorkerFlags(o, argv);
  argv.insert(argv.end(), o.conv_worker_flags.begin(), o.conv_worker_flags.end());
  if (rank == 0 && o.mode != "stanza") AddReportingFlags(o, summary_path, argv);
  return argv;
}

}  // namespace strata
