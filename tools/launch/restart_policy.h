// What a local cluster does after a start of it failed: stop with the
// job's error, start the whole job again (--restart-failed), or start
// again without the conv workers it lost (--lost-conv-worker continue;
// lost_conv_worker.h says what each policy does). Pure: the launcher
// (local_cluster.h) acts on the decision.
#ifndef STRATA_TOOLS_LAUNCH_RESTART_POLICY_H_
#define STRATA_TOOLS_LAUNCH_RESTART_POLICY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/train/lost_nodes.h"
#include "tools/launch/cluster_launch_options.h"
#include "tools/launch/lost_conv_worker.h"

namespace strata {

struct AfterFailure {
  enum class Action { kStop, kRestart, kContinueWithout };
  Action action = Action::kStop;
  // kStop: the job's error. When it does not carry the failed start's own
  // error (`run_error_untold`), the launcher logs that first.
  absl::Status error;
  bool run_error_untold = false;
  // kContinueWithout: how many conv workers carry on.
  int conv_workers = 0;
  // The conv workers the start lost, "worker 1" or "workers 1, 2" ("" = none).
  std::string lost;
};

// After a failed start of the job of `o` with `conv_workers` conv workers
// (fewer than o's once some were left behind), `restarts` restarts made:
// `run` is the start's error, `cause` the process that caused it
// (CauseOfFailure) and `recorded` the conv workers the coordinator declared
// dead. A lost conv worker goes as o.lost_conv_worker says; any other
// failure restarts the job while o.restart_failed allows.
AfterFailure DecideAfterFailure(const ClusterLaunchOptions& o, int conv_workers, int restarts,
                                const absl::Status& run, const FailedProcess& cause,
                                const std::vector<LostNode>& recorded);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_RESTART_POLICY_H_
