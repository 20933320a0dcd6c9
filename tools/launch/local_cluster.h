// LocalCluster: starts a whole Strata cluster on this machine as separate
// processes (servers, then workers) on loopback with free ports, merges
// their output into one view, and stops all of them cleanly on Ctrl-C or on
// the first failure — no orphans: children also die with the launcher
// (PR_SET_PDEATHSIG).
#ifndef STRATA_TOOLS_LAUNCH_LOCAL_CLUSTER_H_
#define STRATA_TOOLS_LAUNCH_LOCAL_CLUSTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "tools/launch/cluster_launch_options.h"

namespace strata {

// Runs the cluster to completion and returns the summary of the reporting
// process (worker 0 in ps mode, FC worker 0 in stanza mode), one per job.
// Fails, naming the process and showing the end of its output, when any
// process exits with an error; every other process is then stopped. With
// several jobs the traffic and time breakdowns are not in the summaries
// (a process's counters cover all its jobs).
absl::StatusOr<std::vector<RunSummary>> RunLocalCluster(const ClusterLaunchOptions& options);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_LOCAL_CLUSTER_H_
