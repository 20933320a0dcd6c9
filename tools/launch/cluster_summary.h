// The summaries of a local cluster's finished run, one per job: what its
// reporting process wrote (worker 0 in ps mode, FC worker 0 in stanza
// mode), with each job's controller events (conv worker 0 records them)
// when a controller ran. With one job, also the cluster's traffic (every
// byte counted once, by its sender, from each process's traffic report)
// and the conv workers' mean iteration breakdown, which are logged and
// added to the summary file at --summary-out. With several jobs they are
// not: a process's counters cover all its jobs.
#ifndef STRATA_TOOLS_LAUNCH_CLUSTER_SUMMARY_H_
#define STRATA_TOOLS_LAUNCH_CLUSTER_SUMMARY_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "tools/launch/cluster_launch_options.h"

namespace strata {

// A process's "[traffic] {...}" line as the launcher read it from its
// output (the report: core/net/traffic.h's TrafficReport as JSON).
struct ProcessTrafficLine {
  std::string role;  // server, fc_worker or conv_worker
  nlohmann::json report;
};

// `summary_path` is where the reporting process wrote (per job, PathForJob,
// with several); `records_dir` where conv worker 0 wrote its records.
// Internal naming the path when a job's summary is missing.
absl::StatusOr<std::vector<RunSummary>> CollectSummaries(
    const ClusterLaunchOptions& o, const std::string& summary_path, const std::string& records_dir,
    const std::vector<ProcessTrafficLine>& traffic);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_CLUSTER_SUMMARY_H_
