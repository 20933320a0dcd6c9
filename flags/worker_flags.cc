#include "flags/worker_flags.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "core/model/job_identity.h"
#include "core/model/job_spec.h"
#include "core/net/admission.h"
#include "core/status.h"
#include "flags/cluster_flags.h"
#include "flags/device_flags.h"
#include "flags/training_flags.h"
#include "scheduler/crossover.h"

ABSL_FLAG(std::string, config, "", "job config JSON file (required)");
ABSL_FLAG(int64_t, threads, 0, "CPU threads (overrides training.threads)");
ABSL_FLAG(bool, evaluate, true, "the reporting worker evaluates after every epoch");
ABSL_FLAG(int64_t, train_limit, 0, "use only the first N training images (0: all)");
ABSL_FLAG(std::string, summary_out, "", "reporting worker: summary JSON");
ABSL_FLAG(std::string, metrics_out, "", "reporting worker: metrics JSON lines");
ABSL_FLAG(std::string, records_out, "",
          "this process: one JSON line per iteration (phase seconds, bytes, knobs)");
ABSL_FLAG(std::string, parameters_out, "",
          "reporting worker: final parameters (checkpoint format)");
ABSL_FLAG(bool, progress, true, "the reporting worker shows progress on stderr");
ABSL_FLAG(bool, shared_memory, true,
          "reach servers on this host and network namespace through a shared-memory lane "
          "(headers over a Unix packet socket, data in shared memory; false: all over the "
          "socket)");

ABSL_FLAG(std::string, policy, "crossover",
          "with several --job: how the jobs share this process's cores: exclusive (turns by "
          "whole iterations), naive (no arbitration) or crossover (one computes while the "
          "others communicate)");
ABSL_FLAG(std::string, weights, "",
          "with several --job: each job's share of the cores under crossover, comma-separated "
          "(default: equal)");

namespace strata {

namespace {

// Every option from the flags, for the job of the config at `path` run in
// `mode`, its client channels carrying `faults`.
absl::Status WorkerOptionsFor(const std::string& path, const std::string& mode,
                              const FaultRates& faults, WorkerOptions* o) {
  STRATA_ASSIGN_OR_RETURN(o->config, LoadJobConfig(path));
  TrainingConfig& tc = o->config.training;
  ApplyTrainingFlags(&tc);
  STRATA_RETURN_IF_ERROR(ApplyDeviceFlags(&tc));
  if (absl::GetFlag(FLAGS_threads) > 0) tc.threads = absl::GetFlag(FLAGS_threads);
  tc.evaluate = absl::GetFlag(FLAGS_evaluate);
  STRATA_ASSIGN_OR_RETURN(const JobAddressFlags address, JobAddressFromFlags());
  o->client.coordinator = address.coordinator;
  JobCredentials& job = o->client.credentials;
  job.job_id = address.job_id;
  STRATA_ASSIGN_OR_RETURN(job.token, LoadJobToken(JobTokenFileFromFlags()));
  job.identity = JobIdentity(o->config);
  job.spec = JobSpecText(o->config, mode);
  o->client.timeout = TimeoutFromFlags();
  o->chunk_elements = address.chunk_elements;
  o->client.shared_memory = absl::GetFlag(FLAGS_shared_memory);
  o->client.shm_slot_bytes = static_cast<uint64_t>(o->chunk_elements) * sizeof(float);
  o->run.train_limit = absl::GetFlag(FLAGS_train_limit);
  o->run.summary_out = absl::GetFlag(FLAGS_summary_out);
  o->run.metrics_out = absl::GetFlag(FLAGS_metrics_out);
  o->run.records_out = absl::GetFlag(FLAGS_records_out);
  o->run.progress = absl::GetFlag(FLAGS_progress);
  o->parameters_out = absl::GetFlag(FLAGS_parameters_out);
  if (faults.any()) o->client.decorate_channel = FaultyChannels(faults, &InjectedFaults());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<JobRun>> JobsFromFlags(const std::vector<std::string>& job_configs,
                                                  const std::string& mode,
                                                  const FaultRates& faults) {
  std::vector<JobRun> jobs;
  if (job_configs.empty()) {
    const std::string path = absl::GetFlag(FLAGS_config);
    if (path.empty()) return absl::InvalidArgumentError("--config is required");
    JobRun job;
    STRATA_RETURN_IF_ERROR(WorkerOptionsFor(path, mode, faults, &job.options));
    jobs.push_back(std::move(job));
    return jobs;
  }
  if (!absl::GetFlag(FLAGS_config).empty()) {
    return absl::InvalidArgumentError("give --config (one job) or --job (one or more), not both");
  }
  STRATA_ASSIGN_OR_RETURN(const std::vector<double> weights,
                          ParseDeviceWeights(absl::GetFlag(FLAGS_weights), job_configs.size()));
  const bool several = job_configs.size() > 1;
  for (size_t i = 0; i < job_configs.size(); ++i) {
    JobRun job;
    job.weight = weights[i];
    WorkerOptions& o = job.options;
    STRATA_RETURN_IF_ERROR_CTX(WorkerOptionsFor(job_configs[i], mode, faults, &o),
                               absl::StrCat("--job ", job_configs[i]));
    o.client.credentials.job_id += i;
    if (several) {
      const uint64_t id = o.client.credentials.job_id;
      o.run.summary_out = PathForJob(o.run.summary_out, id);
      o.run.metrics_out = PathForJob(o.run.metrics_out, id);
      o.run.records_out = PathForJob(o.run.records_out, id);
      o.parameters_out = PathForJob(o.parameters_out, id);
      o.run.progress = o.run.progress && i == 0;  // one progress line per terminal
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

absl::StatusOr<SharingPolicy> SharingPolicyFromFlags() {
  return ParseSharingPolicy(absl::GetFlag(FLAGS_policy));
}

}  // namespace strata
