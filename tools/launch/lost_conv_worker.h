// What a job does when it loses a conv worker: one killed (a signal, the
// OOM killer, a host gone), or one the coordinator declared dead when its
// heartbeats fell silent (a hung process or host). A conv worker holds no
// state the servers do not, so the job can go on without it.
//
//   strata_launch ... --checkpoint-dir ckpt --checkpoint-every 50 --lost-conv-worker continue
//
// Policies (--lost-conv-worker):
//  * restart (the default): like any other role; with --restart-failed the
//    whole job starts again from the newest complete checkpoint epoch, the
//    lost worker with it; without, the job stops with its error.
//  * continue: the job starts again from the newest complete epoch without
//    it: the remaining conv workers split every global batch (the largest
//    number of them that divides every job's batch, and at least one per
//    FC worker), so under BSP each step is the same step. Not counted
//    against --restart-failed. Needs BSP (a BSP epoch holds every worker
//    at one iteration; SSP and ASP shards keep a clock per worker) and
//    --checkpoint-dir.
//  * stop: the job stops with the lost worker's error, even with
//    --restart-failed (which still restarts the job for any other role).
// A conv worker that exits with an error of its own (it is alive and says
// why: a file it cannot read) is not lost: that failure follows
// --restart-failed whatever the policy.
#ifndef STRATA_TOOLS_LAUNCH_LOST_CONV_WORKER_H_
#define STRATA_TOOLS_LAUNCH_LOST_CONV_WORKER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/train/lost_nodes.h"

namespace strata {

enum class LostConvWorkerPolicy { kRestart, kContinue, kStop };

// "restart", "continue" or "stop"; InvalidArgument naming the choices.
absl::StatusOr<LostConvWorkerPolicy> ParseLostConvWorkerPolicy(const std::string& name);

// A process of a failed run that ended, as the launcher saw it.
struct FailedProcess {
  std::string role;  // server, conv_worker, fc_worker
  int rank = 0;
  bool killed = false;  // by a signal, rather than exiting with an error
};

// Of the processes of a failed run that had ended when the launcher stopped
// it (`failed`, in the order it saw them; not empty), the index of the
// cause: the first killed by a signal, else the first seen. A process
// killed takes its peers down with errors of their own ("closed the
// connection"), and under load the launcher may see one of those first.
size_t CauseOfFailure(const std::vector<FailedProcess>& failed);

// The conv workers (ranks, ascending, each once) the run lost: the failure's
// cause (`first`, CauseOfFailure) when it is a conv worker killed by a
// signal, and every conv worker the coordinator recorded as dead
// (`recorded`).
std::vector<int> LostConvWorkers(const FailedProcess& first, const std::vector<LostNode>& recorded);

// How many conv workers carry on when `lost` of `conv_workers` are gone:
// the most, up to the others, that divide every one of `batch_sizes`.
// FailedPrecondition when that is fewer than max(1, fc_workers), naming
// the numbers.
absl::StatusOr<int> ConvWorkersWithout(int conv_workers, int lost,
                                       const std::vector<int64_t>& batch_sizes, int fc_workers);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_LOST_CONV_WORKER_H_
