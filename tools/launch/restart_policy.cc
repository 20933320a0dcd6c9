#include "tools/launch/restart_policy.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"

namespace strata {

AfterFailure DecideAfterFailure(const ClusterLaunchOptions& o, int conv_workers, int restarts,
                                const absl::Status& run, const FailedProcess& cause,
                                const std::vector<LostNode>& recorded) {
  AfterFailure after;
  const std::vector<int> lost = LostConvWorkers(cause, recorded);
  if (!lost.empty()) {
    after.lost = absl::StrCat(lost.size() == 1 ? "worker " : "workers ", absl::StrJoin(lost, ", "));
  }
  if (!lost.empty() && o.lost_conv_worker == LostConvWorkerPolicy::kStop) {
    after.error = WithContext(run, absl::StrCat("the job lost conv ", after.lost,
                                                " and --lost-conv-worker stop ends it"));
    return after;
  }
  if (!lost.empty() && o.lost_conv_worker == LostConvWorkerPolicy::kContinue) {
    const absl::StatusOr<int> remaining =
        ConvWorkersWithout(conv_workers, static_cast<int>(lost.size()), o.batch_sizes,
                           o.mode == "stanza" ? o.fc_workers : 0);
    if (!remaining.ok()) {
      after.error = WithContext(remaining.status(), absl::StrCat("the job lost conv ", after.lost));
      after.run_error_untold = true;
      return after;
    }
    after.action = AfterFailure::Action::kContinueWithout;
    after.conv_workers = *remaining;
    return after;
  }
  if (restarts >= o.restart_failed) {
    after.error = run;
    return after;
  }
  after.action = AfterFailure::Action::kRestart;
  return after;
}

}  // namespace strata
