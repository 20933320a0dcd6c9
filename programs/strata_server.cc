// strata_server: a parameter-server process (rank 0 is also the coordinator).
//
//   strata_server --rank 0 --coordinator tcp://HOST:PORT --config job.json
//       [--servers S] [--conv-workers N] [--consistency bsp|ssp|asp] [--staleness s]
//       [--job-token-file FILE]
//       [--checkpoint shard.ckpt | --checkpoint-dir DIR] [--checkpoint-every K]
//       [--keep-checkpoints N] [--restore]
//
//   strata_server --rank 0 --coordinator tcp://HOST:PORT --job a.json --job b.json
//
//   strata_server --rank R --coordinator tcp://HOST:PORT [--servers S] [--serve-forever]
//
// Rank 0 binds the coordinator address (or --bind); other ranks bind --bind
// (default tcp://127.0.0.1:0, any free port) and register with the
// coordinator, advertising --advertise (core/net/serving_address.h). It
// serves until every worker reports done, then writes its final checkpoint.
// With several --job configs it serves each job (its own keys, rules and
// coordinator) until every one is over. Started with no job (or with
// --learn-jobs), it learns each job from its workers' hellos
// (server/server_node.h): the job's config, mode and layout are the
// workers', the rules (consistency, staleness, checkpoints, timeouts) this
// process's flags; it exits when the last job it served ends, or with
// --serve-forever only on SIGTERM or SIGINT.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/model/job_config.h"
#include "core/model/job_spec.h"
#include "core/net/admission.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/count_list.h"
#include "core/util/log.h"
#include "core/util/process_name.h"
#include "flags/cluster_flags.h"
#include "flags/training_flags.h"
#include "server/server_node.h"
#include "startup/program_startup.h"

ABSL_FLAG(int32_t, rank, 0, "server rank in [0, servers); 0 is also the coordinator");
ABSL_FLAG(std::string, config, "", "job config JSON file (required)");
ABSL_FLAG(std::string, mode, "ps", "ps (every parameter) or stanza (the conv trunk's only)");
ABSL_FLAG(std::string, checkpoint, "", "this shard's checkpoint file");
ABSL_FLAG(double, dead_timeout, 10.0, "seconds without a heartbeat before a node is declared dead");
ABSL_FLAG(std::string, lost_nodes_out, "",
          "rank 0: record each node declared dead here as JSON, before anyone is told (for "
          "launchers that decide what the job does without it)");
ABSL_FLAG(std::string, kv_sizes, "",
          "plain key-value mode: comma-separated parameter sizes (elements) instead of a model; "
          "--config is then optional (plain SGD, lr --kv-lr)");
ABSL_FLAG(double, kv_lr, 0.01, "learning rate of the plain key-value mode");
ABSL_FLAG(int32_t, threads, 1,
          "CPU threads for the optimizer; 1 leaves the other cores to the network");
ABSL_FLAG(int64_t, max_message_mb, 1024, "largest message accepted (MiB, 1 to 4096)");
ABSL_FLAG(bool, learn_jobs, false,
          "also serve jobs this process was not given, learned from their workers' hellos "
          "(implied when no --config, --job or --kv-sizes is given)");
ABSL_FLAG(double, assemble_timeout, 60.0,
          "seconds a learned job's nodes may take to register before server 0 ends it");
ABSL_FLAG(bool, serve_forever, false,
          "when learning jobs, stay when every job is over (stop with SIGTERM or SIGINT)");

namespace strata {
namespace {

// The options every job of this process shares: rank, addresses, token,
// rules, checkpoints, timeouts and limits.
absl::StatusOr<ServerOptions> ProcessOptionsFromFlags() {
  ServerOptions o;
  STRATA_ASSIGN_OR_RETURN(const JobAddressFlags address, JobAddressFromFlags());
  const ConsistencyFlags consistency = ConsistencyFromFlags();
  o.rank = absl::GetFlag(FLAGS_rank);
  o.coordinator = address.coordinator;
  o.serving = ServingAddressFromFlags();
  STRATA_ASSIGN_OR_RETURN(const FaultRates faults,
                          FaultRatesFromFlags(ProcessName("server", o.rank)));
  if (faults.any()) o.decorate_endpoint = FaultyEndpoints(faults, &InjectedFaults());
  o.job_id = address.job_id;
  STRATA_ASSIGN_OR_RETURN(o.job_token, LoadJobToken(JobTokenFileFromFlags()));
  STRATA_ASSIGN_OR_RETURN(o.admin_token, AdminTokenFromFlags());
  STRATA_ASSIGN_OR_RETURN(o.consistency, ParseConsistency(consistency.consistency));
  o.staleness = consistency.staleness;
  o.chunk_elements = address.chunk_elements;
  o.ready_file = ReadyFileFromFlags();
  const CheckpointFlags checkpoints = CheckpointFromFlags();
  o.checkpoint_path = absl::GetFlag(FLAGS_checkpoint);
  o.checkpoint_dir = checkpoints.dir;
  o.checkpoint_every = checkpoints.every;
  o.keep_checkpoints = checkpoints.keep;
  o.restore = checkpoints.restore;
  o.dead_after = absl::Seconds(absl::GetFlag(FLAGS_dead_timeout));
  o.lost_nodes_out = absl::GetFlag(FLAGS_lost_nodes_out);
  STRATA_ASSIGN_OR_RETURN(o.knob_lead, KnobLeadFromFlags());
  const int64_t max_message_mb = absl::GetFlag(FLAGS_max_message_mb);
  if (max_message_mb < 1 || max_message_mb > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-message-mb ", max_message_mb, ": give a size from 1 to 4096 MiB"));
  }
  o.limits.max_message_bytes = static_cast<uint64_t>(max_message_mb) << 20;
  if (!o.checkpoint_path.empty() && !o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "give --checkpoint (this shard alone) or --checkpoint-dir (coordinated epochs), not both");
  }
  if (o.restore && o.checkpoint_path.empty() && o.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--restore needs --checkpoint or --checkpoint-dir");
  }
  if (o.keep_checkpoints < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--keep-checkpoints ", o.keep_checkpoints, ": keep at least 1"));
  }
  return o;
}

// `mode` checked, and the `fc_workers` it takes (stanza only).
absl::Status SetMode(const std::string& mode, int fc_workers, ServerOptions* o) {
  if (mode != "ps" && mode != "stanza") {
    return absl::InvalidArgumentError(absl::StrCat("--mode ", mode, ": use ps or stanza"));
  }
  o->mode = mode;
  o->fc_workers = mode == "stanza" ? fc_workers : 0;
  return absl::OkStatus();
}

// The options of the job of the config at `config_path` ("" with
// --kv-sizes), every flag applied.
absl::StatusOr<ServerOptions> JobFromFlags(const std::string& config_path) {
  STRATA_ASSIGN_OR_RETURN(ServerOptions o, ProcessOptionsFromFlags());
  if (!absl::GetFlag(FLAGS_kv_sizes).empty()) {
    STRATA_ASSIGN_OR_RETURN(o.kv_sizes,
                            ParseCountList("--kv-sizes", absl::GetFlag(FLAGS_kv_sizes)));
    o.config.optimizer.lr = static_cast<float>(absl::GetFlag(FLAGS_kv_lr));
  } else if (config_path.empty()) {
    return absl::InvalidArgumentError("--config is required (or --kv-sizes)");
  }
  if (!config_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.config, LoadJobConfig(config_path));
  }
  ApplyTrainingFlags(&o.config.training);
  const ClusterLayout layout = LayoutFromFlags(o.config.cluster);
  o.servers = layout.servers;
  o.workers = layout.conv_workers;
  STRATA_RETURN_IF_ERROR(SetMode(absl::GetFlag(FLAGS_mode), layout.fc_workers, &o));
  return o;
}

// The options of job `job_id` of `spec`, learned from its workers: its
// config, mode and layout are theirs, everything else this process's.
absl::StatusOr<ServerOptions> LearnedJob(const ServerOptions& process, const JobSpec& spec,
                                         uint64_t job_id) {
  ServerOptions o = process;
  o.config = spec.config;
  o.job_id = job_id;
  o.restore = false;
  o.checkpoint_path = PathForJob(process.checkpoint_path, job_id);
  o.checkpoint_dir = PathForJob(process.checkpoint_dir, job_id);
  o.assemble_within = absl::Seconds(absl::GetFlag(FLAGS_assemble_timeout));
  const ClusterConfig& cluster = spec.config.cluster;
  const int group = LayoutFromFlags(cluster).servers;  // --servers where given
  if (group != cluster.servers) {
    return absl::InvalidArgumentError(absl::StrCat("its config has ", cluster.servers,
                                                   " servers (cluster.servers), this server group ",
                                                   group, " (--servers)"));
  }
  o.servers = group;
  o.workers = static_cast<int>(cluster.conv_workers);
  STRATA_RETURN_IF_ERROR(SetMode(spec.mode, static_cast<int>(cluster.fc_workers), &o));
  return o;
}

std::atomic<bool> stop_requested{false};

void RequestStop(int) { stop_requested.store(true); }

absl::Status Run(const std::vector<std::string>& job_configs) {
  STRATA_RETURN_IF_ERROR(InstallConnectionSecurityFromFlags());
  ServerNodeOptions node;
  STRATA_ASSIGN_OR_RETURN(node.process, ProcessOptionsFromFlags());
  const bool given_one =
      !absl::GetFlag(FLAGS_config).empty() || !absl::GetFlag(FLAGS_kv_sizes).empty();
  if (given_one && !job_configs.empty()) {
    return absl::InvalidArgumentError(
        "give --config or --kv-sizes (one job) or --job (one or more), not both");
  }
  if (given_one) {
    STRATA_ASSIGN_OR_RETURN(ServerOptions job, JobFromFlags(absl::GetFlag(FLAGS_config)));
    node.jobs.push_back(std::move(job));
  }
  for (size_t i = 0; i < job_configs.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ServerOptions job, JobFromFlags(job_configs[i]));
    job.job_id += i;
    if (job_configs.size() > 1) {
      job.checkpoint_path = PathForJob(job.checkpoint_path, job.job_id);
      job.checkpoint_dir = PathForJob(job.checkpoint_dir, job.job_id);
    }
    node.jobs.push_back(std::move(job));
  }
  const bool learn =
      node.jobs.empty() || absl::GetFlag(FLAGS_learn_jobs) || absl::GetFlag(FLAGS_serve_forever);
  if (learn) {
    if (node.process.restore && node.jobs.empty()) {
      return absl::InvalidArgumentError(
          "--restore needs the job's --config: a learned job starts fresh");
    }
    const ServerOptions process = node.process;
    node.learning.options_for = [process](const JobSpec& spec, uint64_t job_id) {
      return LearnedJob(process, spec, job_id);
    };
    node.learning.serve_forever = absl::GetFlag(FLAGS_serve_forever);
    struct sigaction sa = {};
    sa.sa_handler = RequestStop;
    ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, &sa, nullptr);
    node.stop = &stop_requested;
  }
  SetCpuThreads(absl::GetFlag(FLAGS_threads));
  STRATA_ASSIGN_OR_RETURN(auto server, ServerNode::Create(std::move(node)));
  return server->Run();
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const strata::ProgramArguments args = strata::StartProgram(
      argc, argv,
      "Strata parameter server.\n  strata_server --rank R --coordinator tcp://HOST:PORT "
      "--config JOB.json [--servers S] [--conv-workers N] [--consistency bsp|ssp|asp]",
      "job");
  strata::SetLogProcess(absl::StrCat("server ", absl::GetFlag(FLAGS_rank)));
  return strata::ExitCodeFor("strata_server", strata::Run(args.repeated));
}
