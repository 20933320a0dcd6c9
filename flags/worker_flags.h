// The command-line flags every worker binary (strata_conv_worker,
// strata_fc_worker) shares, and their reading into WorkerOptions:
// --config, --threads, --evaluate, --train-limit, --summary-out, --metrics-out,
// --records-out, --parameters-out, --progress, --shared-memory, --job,
// --policy, --weights, the shared
// address, token and timeout flags (flags/cluster_flags.h:
// --coordinator, --job-id, --chunk-elements, --job-token-file, --timeout)
// and the training and device overrides (flags/training_flags.h,
// flags/device_flags.h). Each binary
// adds its own --rank.
#ifndef STRATA_FLAGS_WORKER_FLAGS_H_
#define STRATA_FLAGS_WORKER_FLAGS_H_

#include "absl/status/status.h"
#include "core/net/fault_injection.h"
#include "runtime/job_group.h"
#include "runtime/worker_options.h"

namespace strata {

// The jobs this process runs in `mode` (ps or stanza): the one of --config
// when `job_configs` (the values of a repeated --job) is empty, else one per
// --job config, with job ids --job-id, --job-id + 1, ... in that order,
// --weights as their shares, and, when there are several, each output path
// tagged with its job id (flags/cluster_flags.h: PathForJob) and only
// the first job's progress line. Each job's options carry every override and
// its spec (core/model/job_spec.h) for servers that learn jobs; all but the
// rank are set; the channels of each job's client carry `faults` (this
// process's FaultRatesFromFlags). Fails when --config is missing or a
// config is invalid.
absl::StatusOr<std::vector<JobRun>> JobsFromFlags(const std::vector<std::string>& job_configs,
                                                  const std::string& mode,
                                                  const FaultRates& faults);
// --policy.
absl::StatusOr<SharingPolicy> SharingPolicyFromFlags();

}  // namespace strata

#endif  // STRATA_FLAGS_WORKER_FLAGS_H_
