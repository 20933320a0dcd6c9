// The command line of each process of a cluster, for every launcher: what a
// server, an FC worker or a conv worker of the job in ClusterLaunchOptions
// is told (binary, job configs and overrides, layout, rules, coordinator).
// Where a process binds and where it writes its records are the launcher's
// to add (they depend on where it runs).
#ifndef STRATA_TOOLS_LAUNCH_ROLE_COMMANDS_H_
#define STRATA_TOOLS_LAUNCH_ROLE_COMMANDS_H_

#include <string>
#include <vector>

#include "tools/launch/cluster_launch_options.h"

namespace strata {

std::vector<std::string> ServerCommand(const ClusterLaunchOptions& o, int rank,
                                       const std::string& coordinator);
// FC worker `rank` (stanza); FC worker 0 reports (RunSummary to
// `summary_path` unless it is "", metrics, progress).
std::vector<std::string> FcWorkerCommand(const ClusterLaunchOptions& o, int rank,
                                         const std::string& coordinator,
                                         const std::string& summary_path);
// Conv worker `rank`; in ps mode worker 0 reports.
std::vector<std::string> ConvWorkerCommand(const ClusterLaunchOptions& o, int rank,
                                           const std::string& coordinator,
                                           const std::string& summary_path);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_ROLE_COMMANDS_H_
