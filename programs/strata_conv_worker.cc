// strata_conv_worker: a conv worker process.
//
//   strata_conv_worker --mode ps|stanza --coordinator tcp://HOST:PORT --config job.json
//       [--rank R] [--threads T] [--timeout 60] [--summary-out s.json] [--metrics-out m.jsonl]
//   strata_conv_worker ... --job a.json --job b.json [--policy crossover] [--weights 1,1]
//   strata_conv_worker ... [--controller changepoint --cost-model cost.json]
//
// With several --job configs the process runs one worker per job, each on
// its own thread, sharing its cores under --policy (runtime/job_group.h).
// Each job runs a controller of its own: --cost-model and --policy-file
// name one file for all of them or one per job, comma-separated, in --job
// order.
//
// `--mode ps` trains the whole model and exchanges every parameter with the
// servers (the classic parameter-server baseline); worker 0 then reports
// (progress, evaluation, summary). `--mode stanza` trains the conv trunk and
// exchanges activations with its FC worker, which reports.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "conv_workers/ps_worker.h"
#include "conv_workers/stanza_worker.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/log.h"
#include "core/util/process_name.h"
#include "flags/cluster_flags.h"
#include "flags/worker_flags.h"
#include "runtime/controller_choice.h"
#include "startup/program_startup.h"

ABSL_FLAG(std::string, mode, "ps", "ps (the whole model) or stanza (the conv trunk only)");
ABSL_FLAG(int32_t, rank, -1, "worker rank (-1: assigned by the coordinator)");

namespace strata {
namespace {

absl::Status Run(const std::vector<std::string>& job_configs) {
  STRATA_RETURN_IF_ERROR(InstallConnectionSecurityFromFlags());
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "ps" && mode != "stanza") {
    return absl::InvalidArgumentError(absl::StrCat("--mode ", mode, ": use ps or stanza"));
  }
  const int rank = absl::GetFlag(FLAGS_rank);
  STRATA_ASSIGN_OR_RETURN(const FaultRates faults,
                          FaultRatesFromFlags(ProcessName("conv_worker", rank)));
  if (!faults.cuts.empty() && rank < 0) {
    return absl::InvalidArgumentError(
        "--inject-faults: cuts and silences name processes; give this conv worker its --rank");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<JobRun> jobs, JobsFromFlags(job_configs, mode, faults));
  // The conv workers' count comes from the coordinator, later; the
  // launcher checked it.
  const ControllerFlags flags = ControllerFromFlags();
  std::vector<ControlledJob> controlled;
  for (const JobRun& job : jobs) {
    controlled.push_back({mode, 0, job.options.config.training.batch_size});
  }
  STRATA_ASSIGN_OR_RETURN(
      const std::vector<ControllerChoice> controllers,
      ChooseControllers(flags.kind, flags.cost_model, flags.policy_file, controlled));
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].options.client.rank = absl::GetFlag(FLAGS_rank);
    jobs[i].options.controller = controllers[i];
  }
  STRATA_ASSIGN_OR_RETURN(const SharingPolicy policy, SharingPolicyFromFlags());
  auto run = [&mode](const WorkerOptions& o) {
    return mode == "stanza" ? RunStanzaConvWorker(o) : RunPsWorker(o).status();
  };
  return CombineJobResults(jobs, RunJobsTogether(jobs, policy, run));
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const strata::ProgramArguments args = strata::StartProgram(
      argc, argv,
      "Strata conv worker.\n  strata_conv_worker --mode ps|stanza --coordinator tcp://HOST:PORT "
      "--config JOB.json [--rank R] [--threads T]",
      "job");
  // Named "worker N" once the coordinator has assigned the rank.
  strata::SetLogProcess(absl::GetFlag(FLAGS_rank) >= 0
                            ? absl::StrCat("worker ", absl::GetFlag(FLAGS_rank))
                            : std::string("worker"));
  return strata::ExitCodeFor("strata_conv_worker", strata::Run(args.repeated));
}
