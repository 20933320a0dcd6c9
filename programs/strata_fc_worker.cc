// strata_fc_worker: an FC worker of stanza mode (the head of the model).
//
//   strata_fc_worker --rank F --coordinator tcp://HOST:PORT --config job.json
//       [--bind tcp://HOST:PORT|tcp://HOST:FIRST-LAST] [--advertise HOST] [--bind-interface IF]
//       [--threads T] [--summary-out s.json] [--metrics-out m.jsonl]
//       [--checkpoint-dir DIR --checkpoint-every K [--restore]]
//
// FC worker 0 prints progress, evaluates after every epoch and writes the
// summary. The other flags are those of every worker (flags/worker_flags.h),
// --job, --policy and --weights among them: with several --job configs
// the process is this FC worker of every job (each binds its own endpoint;
// --ready-file is tagged with each job's id).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "core/process/process_setup.h"
#include "core/status.h"
#include "core/util/log.h"
#include "core/util/process_name.h"
#include "fc_workers/fc_worker.h"
#include "flags/cluster_flags.h"
#include "flags/worker_flags.h"
#include "startup/program_startup.h"

ABSL_FLAG(int32_t, rank, 0, "FC worker rank in [0, fc_workers)");

namespace strata {
namespace {

absl::Status Run(const std::vector<std::string>& job_configs) {
  STRATA_RETURN_IF_ERROR(InstallConnectionSecurityFromFlags());
  STRATA_ASSIGN_OR_RETURN(const FaultRates faults,
                          FaultRatesFromFlags(ProcessName("fc_worker", absl::GetFlag(FLAGS_rank))));
  STRATA_ASSIGN_OR_RETURN(std::vector<JobRun> jobs, JobsFromFlags(job_configs, "stanza", faults));
  for (JobRun& job : jobs) job.options.client.rank = absl::GetFlag(FLAGS_rank);
  STRATA_ASSIGN_OR_RETURN(const SharingPolicy policy, SharingPolicyFromFlags());
  const bool several = jobs.size() > 1;
  auto run = [several, faults](const WorkerOptions& worker) {
    FcWorkerOptions o;
    o.worker = worker;
    o.serving = ServingAddressFromFlags();
    if (o.serving.bind.empty()) o.serving.bind = ServingAddress().bind;
    if (faults.any()) o.decorate_endpoint = FaultyEndpoints(faults, &InjectedFaults());
    const std::string ready = ReadyFileFromFlags();
    const uint64_t job_id = worker.client.credentials.job_id;
    o.ready_file = several ? PathForJob(ready, job_id) : ready;
    const CheckpointFlags checkpoints = CheckpointFromFlags();
    o.checkpoint_dir = several ? PathForJob(checkpoints.dir, job_id) : checkpoints.dir;
    o.checkpoint_every = checkpoints.every;
    o.restore = checkpoints.restore;
    return RunFcWorker(o).status();
  };
  return CombineJobResults(jobs, RunJobsTogether(jobs, policy, run));
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  const strata::ProgramArguments args = strata::StartProgram(
      argc, argv,
      "Strata FC worker (stanza mode).\n  strata_fc_worker --rank F --coordinator "
      "tcp://HOST:PORT --config JOB.json",
      "job");
  strata::SetLogProcess(absl::StrCat("fc worker ", absl::GetFlag(FLAGS_rank)));
  return strata::ExitCodeFor("strata_fc_worker", strata::Run(args.repeated));
}
