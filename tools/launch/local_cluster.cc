#include "tools/launch/local_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/train/checkpoint_epochs.h"
#include "core/train/lost_nodes.h"
#include "core/util/log.h"
#include "core/util/ready_file.h"
#include "core/util/scratch_directory.h"
#include "tools/launch/cluster_summary.h"
#include "tools/launch/condition_driver.h"
#include "tools/launch/launch_plan.h"
#include "tools/launch/process_supervisor.h"
#include "tools/launch/restart_policy.h"

namespace strata {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnSignal(int) { g_interrupted = 1; }

// One local cluster's run, start after start.
class LocalClusterRun {
 public:
  LocalClusterRun(const ClusterLaunchOptions& o, ConditionDriver& conditions,
                  const std::string& scratch, LaunchFiles files)
      : o_(o),
        conditions_(conditions),
        files_(std::move(files)),
        processes_(scratch, o.job_token, o.admin_token) {}

  // Starts the job with `attempt`'s options and `plan`'s processes, and merges their output until
  // all have exited: OK when every one succeeded, else the failure's cause
  // (cause() says whose; every other process is stopped then), Cancelled on
  // Ctrl-C, or the error of a condition that could not be made
  // (conditions_failed()).
  absl::Status StartAndWait(const ClusterLaunchOptions& attempt, const LaunchPlan& plan) {
    processes_.StopAll();
    processes_.Clear();
    conditions_.Restart();  // the new processes get the CPU limits too
    std::filesystem::remove(files_.lost_nodes);
    std::filesystem::remove(files_.ready);
    cause_ = FailedProcess{};
    plan_ = plan;
    STRATA_ASSIGN_OR_RETURN(const std::string coordinator, StartCoordinator(attempt));
    for (size_t i = 1; i < plan_.processes.size(); ++i) {
      const PlannedProcess& p = plan_.processes[i];
      const HostPlace host = conditions_.HostOf(p.host);
      STRATA_RETURN_IF_ERROR(processes_.Start(p, CommandOf(attempt, p, host, coordinator, files_),
                                              host.network_namespace));
    }
    return Supervise();
  }

  const FailedProcess& cause() const { return cause_; }
  bool conditions_failed() const { return conditions_failed_; }
  const LaunchPlan& plan() const { return plan_; }
  void StopAll() { processes_.StopAll(); }

  std::vector<ProcessTrafficLine> Traffic() const {
    std::vector<ProcessTrafficLine> traffic;
    for (const auto& s : processes_.processes()) traffic.push_back({s.planned.role, s.traffic});
    return traffic;
  }

 private:
  // Server 0 (the coordinator) first: the others are told the address its
  // ready file names, which tools that talk to the job find in ours.
  absl::StatusOr<std::string> StartCoordinator(const ClusterLaunchOptions& attempt) {
    const PlannedProcess& p0 = plan_.processes[0];
    const HostPlace host = conditions_.HostOf(p0.host);
    STRATA_RETURN_IF_ERROR(
        processes_.Start(p0, CommandOf(attempt, p0, host, "", files_), host.network_namespace));
    const auto& first = processes_.processes()[0];
    STRATA_ASSIGN_OR_RETURN(const nlohmann::json serving,
                            AwaitReadyFile(files_.ready, "server 0", absl::Seconds(30),
                                           [&]() -> std::optional<std::string> {
                                             processes_.Pump(0);
                                             if (g_interrupted)
                                               return std::string("was interrupted");
                                             if (!first.process->Poll().has_value())
                                               return std::nullopt;
                                             return ExitText(first.process->wait_status());
                                           }));
    const std::string coordinator = serving["address"].get<std::string>();
    STRATA_RETURN_IF_ERROR(
        WriteReadyFile(o_.ready_file, {{"role", "launcher"}, {"address", coordinator}}));
    return coordinator;
  }

  // Merges output until every process has exited; stops everything on the
  // first failure or on Ctrl-C.
  absl::Status Supervise() {
    const auto pid_of = [this](const std::string& role, int rank) {
      return processes_.PidOf(role, rank);
    };
    while (true) {
      const ProcessSupervisor::Reaped reaped = processes_.WaitAndReap(absl::Milliseconds(100));
      if (absl::Status made = conditions_.Apply(pid_of); !made.ok()) {
        conditions_failed_ = true;
        return made;
      }
      if (!reaped.failed.empty()) return processes_.FailureOf(reaped.failed, &cause_);
      if (!reaped.running) return absl::OkStatus();
      if (g_interrupted) {
        LogInfo("interrupted: stopping %zu processes", processes_.processes().size());
        return absl::CancelledError("interrupted by a signal; every process was stopped");
      }
    }
  }

  const ClusterLaunchOptions& o_;
  ConditionDriver& conditions_;
  const LaunchFiles files_;
  ProcessSupervisor processes_;
  LaunchPlan plan_;
  FailedProcess cause_;
  bool conditions_failed_ = false;
};

// Logs what a failed start leads to, before the next start from `epoch`
// (or from the beginning, without one).
void LogNextStart(const absl::Status& run, const AfterFailure& after, int conv_workers,
                  int restarts, const absl::StatusOr<CheckpointEpoch>& epoch,
                  const ClusterLaunchOptions& o) {
  const std::string from =
      epoch.ok() ? absl::StrCat("checkpoint epoch ", epoch->iteration, " in ", o.checkpoint_dir)
                 : absl::StrCat("the beginning (", epoch.status().message(), ")");
  LogWarning("%s", std::string(run.message()).c_str());
  if (after.action == AfterFailure::Action::kContinueWithout) {
    LogWarning("continuing without conv %s: %d conv workers split every batch from %s",
               after.lost.c_str(), conv_workers, from.c_str());
  } else {
    LogWarning("restarting the job (restart %d of %d) from %s", restarts, o.restart_failed,
               from.c_str());
  }
}

}  // namespace

absl::StatusOr<std::vector<RunSummary>> RunLocalCluster(const ClusterLaunchOptions& o) {
  g_interrupted = 0;
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  // Everything the options can get wrong, before anything is made.
  const int cpus_online = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  STRATA_ASSIGN_OR_RETURN(LaunchPlan plan, PlanLocalCluster(o, cpus_online));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ConditionDriver> conditions,
                          ConditionDriver::Create(plan, o.latency));
  // Ready files, the lost-nodes record, ipc sockets, and the summary and
  // records unless they have places of their own.
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch, ScratchDirectory::Make("strata_launch"));
  LaunchFiles files;
  files.summary = o.summary_out.empty() ? scratch.path() + "/summary.json" : o.summary_out;
  std::filesystem::remove(files.summary);
  // Records go where asked, or, for a trace or a controller's events alone,
  // into the scratch folder.
  files.records_dir = !o.records_dir.empty()                   ? o.records_dir
                      : (o.trace_out.empty() && !o.controller) ? ""
                                                               : scratch.path() + "/records";
  if (!files.records_dir.empty()) std::filesystem::create_directories(files.records_dir);
  files.ready = scratch.path() + "/server0.ready.json";
  files.lost_nodes = scratch.path() + "/lost_nodes.json";
  // The schedules' changes go beside the records (launcher.jsonl).
  STRATA_RETURN_IF_ERROR(conditions->RecordChangesIn(files.records_dir));

  // A failed start is retried from the newest complete checkpoint epoch
  // (BSP: every process resumes at the same iteration), up to
  // --restart-failed times; a lost conv worker as --lost-conv-worker says
  // (restart_policy.h).
  LocalClusterRun run(o, *conditions, scratch.path(), files);
  ClusterLaunchOptions attempt = o;
  for (int restarts = 0;;) {
    const absl::Status started = run.StartAndWait(attempt, plan);
    if (started.ok()) break;
    if (absl::IsCancelled(started) || run.conditions_failed()) return started;
    absl::StatusOr<std::vector<LostNode>> recorded = ReadLostNodes(files.lost_nodes);
    if (!recorded.ok()) LogWarning("%s", std::string(recorded.status().message()).c_str());
    const AfterFailure after =
        DecideAfterFailure(o, attempt.conv_workers, restarts, started, run.cause(),
                           recorded.ok() ? *recorded : std::vector<LostNode>{});
    if (after.action == AfterFailure::Action::kStop) {
      if (after.run_error_untold) LogWarning("%s", std::string(started.message()).c_str());
      return after.error;
    }
    if (after.action == AfterFailure::Action::kContinueWithout) {
      attempt.conv_workers = after.conv_workers;
      LeaveConvWorkersFrom(after.conv_workers, plan);
    } else {
      ++restarts;
    }
    run.StopAll();
    std::filesystem::remove(files.summary);
    // The coordinator of the next start chooses the same epoch (the newest
    // that verifies), and every process restores that one.
    const absl::StatusOr<CheckpointEpoch> epoch = ChooseRestoreEpoch(o.checkpoint_dir);
    attempt.restore = epoch.ok();
    LogNextStart(started, after, attempt.conv_workers, restarts, epoch, o);
  }

  if (!o.trace_out.empty()) {
    STRATA_RETURN_IF_ERROR(
        WithContext(WriteChromeTrace(RecordFilesOf(run.plan(), files.records_dir), o.trace_out),
                    "--trace-out"));
    LogInfo("trace of every worker's iterations: %s", o.trace_out.c_str());
  }
  return CollectSummaries(o, files.summary, files.records_dir, run.Traffic());
}

}  // namespace strata
