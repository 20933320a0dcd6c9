// strata_launch: runs a training job from a job config.
//
//   strata_launch --config configs/fashion_mnist.json --mode single --epochs 1
//   strata_launch --jobs a.json,b.json --mode ps --policy crossover
//   srun strata_launch --slurm --config job.json --mode stanza --servers 1 --fc-workers 1
//
// Flags override the config's fields. The run ends with one line
//   final: mode=single test_accuracy=0.9123 images_per_sec=2950
// (with --jobs, one per job: "final: job=2 mode=ps ...")
// and, with --summary-out, a summary JSON. Exit status 0 on success, 1 on any
// error (printed as "strata_launch: error: ...").
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/model/job_config.h"
#include "core/net/admission.h"
#include "core/net/curve.h"
#include "core/net/serving_address.h"
#include "core/ops/backend.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/log.h"
#include "core/util/scratch_directory.h"
#include "flags/cluster_flags.h"
#include "flags/device_flags.h"
#include "flags/training_flags.h"
#include "runtime/controller_choice.h"
#include "runtime/single_trainer.h"
#include "scheduler/crossover.h"
#include "startup/program_startup.h"
#include "tools/launch/chrome_trace.h"
#include "tools/launch/local_cluster.h"
#include "tools/launch/slurm_task.h"

ABSL_FLAG(std::string, config, "", "job config JSON file (required)");
ABSL_FLAG(std::string, mode, "", "single, ps or stanza (default: the config's cluster.mode)");
ABSL_FLAG(int64_t, threads, 0, "CPU threads per process (overrides training.threads)");
ABSL_FLAG(bool, evaluate, true, "evaluate on the test set after every epoch");
ABSL_FLAG(std::string, metrics_out, "", "write metrics as JSON lines to this file");
ABSL_FLAG(std::string, trace_out, "",
          "ps/stanza: write a Chrome trace (Perfetto, chrome://tracing) of every worker's "
          "compute and waits, per job, to this file");
ABSL_FLAG(std::string, records_dir, "",
          "every process writes one JSON line per iteration (phase seconds, bytes, knobs) to "
          "DIR/<process>.jsonl (single mode: DIR/single.jsonl)");
ABSL_FLAG(std::string, summary_out, "", "write the summary JSON to this file");
ABSL_FLAG(std::string, checkpoint, "",
          "checkpoint file (written at the end and every --checkpoint-every steps)");
ABSL_FLAG(bool, progress, true, "show the progress line on stderr");
ABSL_FLAG(std::string, parameters_out, "", "write the final parameters (checkpoint format) here");
ABSL_FLAG(std::string, transport, "ipc",
          "ps: ipc (Unix sockets) or tcp (127.0.0.1) between processes");
ABSL_FLAG(std::string, bandwidth, "",
          "ps, stanza: emulate a cluster network, each process on a host of its own whose link "
          "runs at this rate (e.g. 100mbit, 1gbit, 10gbit; needs root; implies tcp)");
ABSL_FLAG(std::string, latency, "0",
          "ps, stanza: with --bandwidth or --bandwidth-schedule, one-way delay between hosts (e.g. "
          "0.2ms)");
ABSL_FLAG(std::string, port_range, "",
          "ps, stanza: the ports serving processes bind, FIRST-LAST (each socket takes the first "
          "free one; default: any free port); with --bandwidth each process binds 0.0.0.0 on "
          "them and advertises its host's address; on loopback it needs --transport tcp");
ABSL_FLAG(bool, slurm, false,
          "ps, stanza: be one task of a Slurm job step (srun strata_launch --slurm ...): its "
          "role from SLURM_PROCID, the coordinator on the allocation's first host "
          "(tools/launch/slurm_task.h; tools/cloud/slurm/strata.sbatch)");
ABSL_FLAG(int64_t, port_base, 29500,
          "--slurm: the coordinator's port; each task of a host binds ports above it");
ABSL_FLAG(std::string, log_dir, "",
          "--slurm: write each role's output to DIR/<role>-<rank>.log (default: srun's output)");
ABSL_FLAG(bool, colocate_servers, false,
          "ps, stanza: one server per conv worker, on that worker's emulated host (sets "
          "--servers to the conv-worker count)");
ABSL_FLAG(bool, shared_memory, true,
          "ps, stanza: workers reach the servers through shared-memory lanes (processes in "
          "separate emulated hosts never do); false: all over the sockets");
ABSL_FLAG(int, restart_failed, 0,
          "ps, stanza: when a process fails, stop the others and start the whole job again "
          "from the newest complete checkpoint epoch in --checkpoint-dir (from the start where "
          "there is none), at most this many times");
ABSL_FLAG(std::string, lost_conv_worker, "restart",
          "ps, stanza: when a conv worker is killed or falls silent past the heartbeat timeout: "
          "restart (like any role, by --restart-failed), continue (start again from the newest "
          "checkpoint epoch without it, the others splitting every batch; bsp, needs "
          "--checkpoint-dir) or stop (the job ends with its error)");
ABSL_FLAG(std::vector<std::string>, jobs, {},
          "ps, stanza: several job configs (comma-separated) trained at once on one cluster: "
          "every server serves them all and every worker runs them all (job ids 1, 2, ...); "
          "instead of --config");
ABSL_FLAG(std::string, policy, "crossover",
          "with --jobs: how each worker's jobs share its cores: exclusive, naive or crossover");
ABSL_FLAG(std::string, weights, "",
          "with --jobs: each job's share of the cores under crossover, comma-separated");

namespace strata {
namespace {

absl::StatusOr<JobConfig> ConfigFromFlags(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("--config is required");
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(path));
  if (!absl::GetFlag(FLAGS_mode).empty()) config.cluster.mode = absl::GetFlag(FLAGS_mode);
  ApplyTrainingFlags(&config.training);
  if (absl::GetFlag(FLAGS_threads) > 0) config.training.threads = absl::GetFlag(FLAGS_threads);
  config.training.evaluate = absl::GetFlag(FLAGS_evaluate);
  STRATA_RETURN_IF_ERROR(ApplyDeviceFlags(&config.training));
  return config;
}

std::string BinaryDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  const std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// The run's last line; with several jobs, one per job (job=N first).
void PrintFinal(const RunSummary& summary, int job = 0) {
  std::printf("final: %smode=%s test_accuracy=%.4f images_per_sec=%.0f\n",
              job > 0 ? absl::StrCat("job=", job, " ").c_str() : "", summary.mode.c_str(),
              summary.test_accuracy, summary.images_per_sec);
  std::fflush(stdout);
}

// The controller of every job (one per job), checked here before anything
// starts, and the flags that hand it to the conv workers (each checks it
// again; worker 0 runs it). Needs o's mode, conv workers and batch sizes.
absl::Status ControllerFlagsFor(ClusterLaunchOptions& o) {
  const auto [controller, cost_models, policy_files] = ControllerFromFlags();
  std::vector<ControlledJob> controlled;
  for (int64_t batch_size : o.batch_sizes) {
    // (Under Slurm the task count decides the conv workers: known later.)
    controlled.push_back({o.mode, absl::GetFlag(FLAGS_slurm) ? 0 : o.conv_workers, batch_size});
  }
  STRATA_RETURN_IF_ERROR(
      ChooseControllers(controller, cost_models, policy_files, controlled).status());
  if (controller == "none" || controller == "static") return absl::OkStatus();
  // The files as the conv workers will find them, whatever their directory.
  auto absolute = [](const std::string& list) {
    std::vector<std::string> files = absl::StrSplit(list, ',', absl::SkipEmpty());
    for (std::string& f : files) f = std::filesystem::absolute(f).string();
    return absl::StrJoin(files, ",");
  };
  o.controller = true;
  o.conv_worker_flags = {"--controller", controller, "--cost-model", absolute(cost_models)};
  if (!policy_files.empty()) {
    o.conv_worker_flags.insert(o.conv_worker_flags.end(),
                               {"--policy-file", absolute(policy_files)});
  }
  return absl::OkStatus();
}

// The cluster of the job of `config` or, with --jobs, of every job
// (`config` is the first's), as the flags describe it.
absl::StatusOr<ClusterLaunchOptions> ClusterOptionsFromFlags(const JobConfig& config) {
  ClusterLaunchOptions o;
  const std::vector<std::string> jobs = absl::GetFlag(FLAGS_jobs);
  if (jobs.size() > 1) {
    o.job_configs = jobs;
    o.policy = absl::GetFlag(FLAGS_policy);
    o.weights = absl::GetFlag(FLAGS_weights);
    STRATA_RETURN_IF_ERROR(ParseSharingPolicy(o.policy).status());
    STRATA_RETURN_IF_ERROR(ParseDeviceWeights(o.weights, jobs.size()).status());
  }
  o.mode = config.cluster.mode;
  const ClusterLayout layout = LayoutFromFlags(config.cluster);
  const ConsistencyFlags consistency = ConsistencyFromFlags();
  o.fc_workers = layout.fc_workers;
  o.config_path = jobs.empty() ? absl::GetFlag(FLAGS_config) : jobs[0];
  o.config = config;
  o.bin_dir = BinaryDir();
  o.servers = layout.servers;
  o.conv_workers = layout.conv_workers;
  o.colocate_servers = absl::GetFlag(FLAGS_colocate_servers);
  if (o.colocate_servers) o.servers = o.conv_workers;
  o.consistency = consistency.consistency;
  o.transport = absl::GetFlag(FLAGS_transport);
  o.bandwidth = absl::GetFlag(FLAGS_bandwidth);
  const ConditionFlags conditions = ConditionsFromFlags();
  o.bandwidth_schedule = conditions.bandwidth_schedule;
  o.cpu_schedule = conditions.cpu_schedule;
  o.cpu_pin = conditions.cpu_pin;
  o.latency = absl::GetFlag(FLAGS_latency);
  o.port_range = absl::GetFlag(FLAGS_port_range);
  o.staleness = consistency.staleness;
  o.timeout_seconds = absl::ToDoubleSeconds(TimeoutFromFlags());
  o.summary_out = absl::GetFlag(FLAGS_summary_out);
  o.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  o.records_dir = absl::GetFlag(FLAGS_records_dir);
  o.trace_out = absl::GetFlag(FLAGS_trace_out);
  o.ready_file = ReadyFileFromFlags();
  const CheckpointFlags checkpoints = CheckpointFromFlags();
  o.checkpoint_dir = checkpoints.dir;
  o.checkpoint_every = checkpoints.every;
  o.keep_checkpoints = checkpoints.keep;
  o.restore = checkpoints.restore;
  o.restart_failed = absl::GetFlag(FLAGS_restart_failed);
  if (o.restart_failed < 0 || o.keep_checkpoints < 1) {
    return absl::InvalidArgumentError("--restart-failed must be >= 0 and --keep-checkpoints >= 1");
  }
  STRATA_ASSIGN_OR_RETURN(o.lost_conv_worker,
                          ParseLostConvWorkerPolicy(absl::GetFlag(FLAGS_lost_conv_worker)));
  if (o.lost_conv_worker == LostConvWorkerPolicy::kContinue) {
    if (o.consistency != "bsp") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--lost-conv-worker continue needs --consistency bsp: under ", o.consistency,
          " a checkpoint keeps each conv worker's own clock, so the others cannot take its place"));
    }
    if (o.colocate_servers) {
      return absl::InvalidArgumentError(
          "--lost-conv-worker continue cannot keep one server per conv worker "
          "(--colocate-servers)");
    }
    if (o.checkpoint_dir.empty()) {
      return absl::InvalidArgumentError(
          "--lost-conv-worker continue needs --checkpoint-dir (and --checkpoint-every): the "
          "others start again from the newest checkpoint epoch");
    }
  }
  if ((o.restore || o.restart_failed > 0) && o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.restore ? "--restore" : "--restart-failed",
                     " needs --checkpoint-dir (and --checkpoint-every) in ps and stanza modes"));
  }
  STRATA_ASSIGN_OR_RETURN(o.knob_lead, KnobLeadFromFlags());
  STRATA_ASSIGN_OR_RETURN(o.job_token, LoadJobToken(JobTokenFileFromFlags()));
  // Under Slurm, server tasks read it themselves (slurm_task.h).
  if (!absl::GetFlag(FLAGS_slurm)) {
    STRATA_ASSIGN_OR_RETURN(o.admin_token, AdminTokenFromFlags());
  }
  if (const std::string keys = CurveKeysDirFromFlags(); !keys.empty()) {
    STRATA_RETURN_IF_ERROR(WithContext(LoadCurveKeys(keys).status(), "--curve-keys"));
    o.every_process_flags = {"--curve-keys", std::filesystem::absolute(keys).string()};
  }
  STRATA_ASSIGN_OR_RETURN(const FaultRates faults, FaultRatesFromFlags(""));
  if (faults.any()) {
    o.every_process_flags.insert(o.every_process_flags.end(),
                                 {"--inject-faults", FaultSpecToHandOn()});
  }
  const int threads = config.training.threads > 0 ? static_cast<int>(config.training.threads) : 2;
  o.threads_per_worker = std::max(1, threads / o.conv_workers);
  const TrainingConfig& tc = config.training;
  o.override_flags = TrainingFlagArgs(tc);
  // Every worker: FC workers that split MoE experts gather them together
  // before the reporting one evaluates.
  if (!tc.evaluate) o.worker_flags.push_back("--evaluate=false");
  for (std::string& flag : DeviceFlagArgs(tc)) o.worker_flags.push_back(std::move(flag));
  if (!absl::GetFlag(FLAGS_progress)) o.extra_worker_flags.push_back("--progress=false");
  if (!absl::GetFlag(FLAGS_shared_memory)) o.worker_flags.push_back("--shared-memory=false");
  if (!o.port_range.empty()) {
    STRATA_RETURN_IF_ERROR(WithContext(
        ParseBindAddress(absl::StrCat("tcp://127.0.0.1:", o.port_range)).status(), "--port-range"));
  }
  if (!absl::GetFlag(FLAGS_parameters_out).empty()) {
    o.extra_worker_flags.push_back("--parameters-out");
    o.extra_worker_flags.push_back(absl::GetFlag(FLAGS_parameters_out));
  }
  for (const std::string& path : jobs.empty() ? std::vector<std::string>{o.config_path} : jobs) {
    STRATA_ASSIGN_OR_RETURN(const JobConfig job, ConfigFromFlags(path));
    o.batch_sizes.push_back(job.training.batch_size);
    // Under Slurm the task count decides the conv workers (slurm_task.h).
    if (!absl::GetFlag(FLAGS_slurm) && job.training.batch_size % o.conv_workers != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: training.batch_size %d is not divisible by %d conv workers", path,
                          job.training.batch_size, o.conv_workers));
    }
  }
  STRATA_RETURN_IF_ERROR(ControllerFlagsFor(o));
  return o;
}

// `--mode ps` / `--mode stanza`: a local cluster of processes.
absl::Status RunCluster(const JobConfig& config) {
  STRATA_ASSIGN_OR_RETURN(ClusterLaunchOptions o, ClusterOptionsFromFlags(config));
  if (o.job_token.empty()) o.job_token = NewJobToken();
  STRATA_ASSIGN_OR_RETURN(const std::vector<RunSummary> summaries, RunLocalCluster(o));
  for (size_t i = 0; i < summaries.size(); ++i) {
    PrintFinal(summaries[i], summaries.size() > 1 ? static_cast<int>(i) + 1 : 0);
  }
  return absl::OkStatus();
}

absl::Status Run() {
  const std::vector<std::string> jobs = absl::GetFlag(FLAGS_jobs);
  if (!jobs.empty() && !absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError("give --config (one job) or --jobs (several), not both");
  }
  STRATA_ASSIGN_OR_RETURN(JobConfig config,
                          ConfigFromFlags(jobs.empty() ? absl::GetFlag(FLAGS_config) : jobs[0]));
  if (jobs.size() > 1 && config.cluster.mode == "single") {
    return absl::InvalidArgumentError("--jobs needs --mode ps or stanza: jobs share a cluster");
  }
  if (config.cluster.mode == "single" && ControllerFromFlags().kind != "none" &&
      ControllerFromFlags().kind != "static") {
    return absl::InvalidArgumentError(
        "--controller needs --mode ps or stanza: it re-tunes a cluster's knobs");
  }
  if (absl::GetFlag(FLAGS_slurm)) {
    if (config.cluster.mode != "ps" && config.cluster.mode != "stanza") {
      return absl::InvalidArgumentError("--slurm needs --mode ps or stanza");
    }
    STRATA_ASSIGN_OR_RETURN(const ClusterLaunchOptions o, ClusterOptionsFromFlags(config));
    if (o.lost_conv_worker == LostConvWorkerPolicy::kContinue) {
      return absl::InvalidArgumentError(
          "--lost-conv-worker continue restarts a local cluster with fewer conv workers; under "
          "Slurm, submit strata.sbatch again with fewer tasks: it restores the newest epoch of "
          "$STRATA_CHECKPOINT_DIR with the conv workers those tasks give");
    }
    if (o.restart_failed > 0) {
      return absl::InvalidArgumentError(
          "--restart-failed restarts a local cluster; under Slurm, requeue the job (sbatch "
          "--requeue, scontrol requeue) and strata.sbatch resumes from $STRATA_CHECKPOINT_DIR");
    }
    SlurmLaunchOptions slurm;
    slurm.port_base = static_cast<int>(absl::GetFlag(FLAGS_port_base));
    slurm.log_dir = absl::GetFlag(FLAGS_log_dir);
    slurm.admin_token_file = AdminTokenFileFromFlags();
    return RunSlurmTask(o, slurm);  // returns only when it could not become its role
  }
  if (config.cluster.mode == "ps" || config.cluster.mode == "stanza") return RunCluster(config);
  if (config.cluster.mode != "single") {
    return absl::InvalidArgumentError(
        absl::StrFormat("--mode %s: use single, ps or stanza", config.cluster.mode));
  }
  RunOptions options;
  options.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  if (!absl::GetFlag(FLAGS_records_dir).empty()) {
    std::filesystem::create_directories(absl::GetFlag(FLAGS_records_dir));
    options.records_out = absl::GetFlag(FLAGS_records_dir) + "/single.jsonl";
  }
  options.summary_out = absl::GetFlag(FLAGS_summary_out);
  options.checkpoint_path = absl::GetFlag(FLAGS_checkpoint);
  options.checkpoint_every = CheckpointFromFlags().every;
  options.restore = CheckpointFromFlags().restore;
  options.progress = absl::GetFlag(FLAGS_progress);
  options.parameters_out = absl::GetFlag(FLAGS_parameters_out);
  if (options.restore && options.checkpoint_path.empty()) {
    return absl::InvalidArgumentError("--restore needs --checkpoint");
  }
  // A trace alone: the records go to a scratch file.
  const std::string trace_out = absl::GetFlag(FLAGS_trace_out);
  std::optional<ScratchDirectory> scratch;
  if (!trace_out.empty() && options.records_out.empty()) {
    absl::StatusOr<ScratchDirectory> made = ScratchDirectory::Make("strata_trace");
    if (!made.ok()) return made.status();
    options.records_out = scratch.emplace(*std::move(made)).path() + "/single.jsonl";
  }
  absl::StatusOr<RunSummary> summary = TrainSingle(config, options);
  absl::Status traced;
  if (summary.ok() && !trace_out.empty()) {
    traced = WithContext(WriteChromeTrace({{options.records_out, 1}}, trace_out), "--trace-out");
  }
  STRATA_RETURN_IF_ERROR(summary.status());
  STRATA_RETURN_IF_ERROR(traced);
  PrintFinal(*summary);
  return absl::OkStatus();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  strata::StartProgram(
      argc, argv,
      "Runs a Strata training job.\n  strata_launch --config JOB.json [--mode single] "
      "[--epochs E] [--max-steps K] [--threads T] [--seed S] [--metrics-out m.jsonl] "
      "[--records-dir DIR] [--summary-out s.json]");
  strata::SetLogProcess("launcher");
  return strata::ExitCodeFor("strata_launch", strata::Run());
}
