// What a local cluster does after a failed start (tools/launch/
// restart_policy.h): stop, restart the job, or carry on without the conv
// workers it lost, as --restart-failed and --lost-conv-worker say.
#include "tools/launch/restart_policy.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using Action = AfterFailure::Action;

ClusterLaunchOptions Job(LostConvWorkerPolicy policy, int restart_failed) {
  ClusterLaunchOptions o;
  o.mode = "ps";
  o.conv_workers = 4;
  o.batch_sizes = {64};
  o.lost_conv_worker = policy;
  o.restart_failed = restart_failed;
  return o;
}

const absl::Status kRun =
    absl::InternalError("worker 2 was killed by signal 9; stopped the cluster");
const FailedProcess kKilledConvWorker = {"conv_worker", 2, true};
const FailedProcess kFailedServer = {"server", 0, false};

TEST(RestartPolicyTest, AnyFailureRestartsTheJobWhileRestartsAreLeft) {
  const ClusterLaunchOptions o = Job(LostConvWorkerPolicy::kRestart, 2);
  const AfterFailure first = DecideAfterFailure(o, 4, 0, kRun, kFailedServer, {});
  EXPECT_EQ(first.action, Action::kRestart);
  EXPECT_EQ(first.lost, "");
  // A killed conv worker is lost, and under `restart` it restarts like any role.
  const AfterFailure second = DecideAfterFailure(o, 4, 1, kRun, kKilledConvWorker, {});
  EXPECT_EQ(second.action, Action::kRestart);
  EXPECT_EQ(second.lost, "worker 2");
  const AfterFailure spent = DecideAfterFailure(o, 4, 2, kRun, kKilledConvWorker, {});
  EXPECT_EQ(spent.action, Action::kStop);
  EXPECT_EQ(spent.error, kRun);
  EXPECT_FALSE(spent.run_error_untold);
}

TEST(RestartPolicyTest, ContinueCarriesOnWithTheLargestNumberOfConvWorkersThatDividesTheBatch) {
  const ClusterLaunchOptions o = Job(LostConvWorkerPolicy::kContinue, 0);
  // Two lost (one killed, one the coordinator declared dead): 2 of 4 left.
  const AfterFailure after =
      DecideAfterFailure(o, 4, 0, kRun, kKilledConvWorker, {{1, "conv_worker", 0, "silent"}});
  EXPECT_EQ(after.action, Action::kContinueWithout);
  EXPECT_EQ(after.conv_workers, 2);
  EXPECT_EQ(after.lost, "workers 0, 2");
  // Not counted against --restart-failed 0; a server's failure is.
  EXPECT_EQ(DecideAfterFailure(o, 2, 0, kRun, kFailedServer, {}).action, Action::kStop);
  // None left that can take the batch: the job stops, and the start's own
  // error is told apart.
  const AfterFailure last = DecideAfterFailure(o, 1, 0, kRun, {"conv_worker", 0, true}, {});
  EXPECT_EQ(last.action, Action::kStop);
  EXPECT_TRUE(last.run_error_untold);
  EXPECT_EQ(last.error.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(last.error.message(),
            "the job lost conv worker 0: without 1 of its 1 conv workers the job cannot go on: no "
            "conv worker is left");
}

TEST(RestartPolicyTest, StopEndsTheJobOnALostConvWorkerEvenWithRestartsLeft) {
  const ClusterLaunchOptions o = Job(LostConvWorkerPolicy::kStop, 3);
  const AfterFailure after = DecideAfterFailure(o, 4, 0, kRun, kKilledConvWorker, {});
  EXPECT_EQ(after.action, Action::kStop);
  EXPECT_EQ(after.error.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(after.error.message(),
            "the job lost conv worker 2 and --lost-conv-worker stop ends it: worker 2 was killed "
            "by signal 9; stopped the cluster");
  // A conv worker that failed with an error of its own is not lost.
  EXPECT_EQ(DecideAfterFailure(o, 4, 0, kRun, {"conv_worker", 2, false}, {}).action,
            Action::kRestart);
}

}  // namespace
}  // namespace strata
