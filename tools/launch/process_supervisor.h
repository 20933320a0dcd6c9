// ProcessSupervisor: the processes of one start of a local cluster. It
// starts each one (its output on a pipe, tied to the launcher's life, the
// job's secrets in its environment), merges their output into the
// launcher's, keeps each one's last lines and its traffic report, reaps
// whoever ends, names the cause when some fail, and stops them all.
//
//   ProcessSupervisor processes(scratch, o.job_token, o.admin_token);
//   STRATA_RETURN_IF_ERROR(processes.Start(planned, argv, host.network_namespace));
//   ProcessSupervisor::Reaped r = processes.WaitAndReap(absl::Milliseconds(100));
//   if (!r.failed.empty()) return processes.FailureOf(r.failed, &cause);
//
// Not thread-safe: the launcher's loop is its only caller.
#ifndef STRATA_TOOLS_LAUNCH_PROCESS_SUPERVISOR_H_
#define STRATA_TOOLS_LAUNCH_PROCESS_SUPERVISOR_H_

#include <sys/types.h>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/process/subprocess.h"
#include "tools/launch/launch_plan.h"
#include "tools/launch/lost_conv_worker.h"

namespace strata {

// "exited with status 1", "was killed by signal 9": a wait status in words.
std::string ExitText(int wait_status);

class ProcessSupervisor {
 public:
  struct Supervised {
    PlannedProcess planned;
    std::unique_ptr<ChildProcess> process;
    std::string partial;           // output after its last complete line
    std::deque<std::string> tail;  // its last lines, for an error report
    nlohmann::json traffic;        // its "[traffic] {...}" report, once made
  };

  // Each process gets `scratch` as its TMPDIR (where ZeroMQ makes the
  // socket of an `ipc://*` binding, so one killed with its sockets open
  // leaves nothing behind once the launcher removes the scratch folder),
  // the job token (when set), and, servers alone, the admin token.
  ProcessSupervisor(std::string scratch, std::string job_token, std::string admin_token);
  ~ProcessSupervisor() { StopAll(); }
  ProcessSupervisor(const ProcessSupervisor&) = delete;
  ProcessSupervisor& operator=(const ProcessSupervisor&) = delete;

  // Starts `argv` as `planned`, inside the network namespace at `netns`
  // when it is not empty; fails naming the program when it cannot start.
  absl::Status Start(const PlannedProcess& planned, const std::vector<std::string>& argv,
                     const std::string& netns);

  // Passes on the complete lines process `i` has written: log lines as they
  // are, anything else prefixed with the process's label.
  void Pump(size_t i);

  // Waits up to `wait` for output, passes it on and reaps whoever ended.
  struct Reaped {
    bool running = false;        // some process still runs
    std::vector<size_t> failed;  // those that ended with an error, in the order seen
  };
  Reaped WaitAndReap(absl::Duration wait);

  // The error of a start some of whose processes failed (`failed`, from
  // WaitAndReap). A failure rarely comes alone: a process killed takes its
  // peers down with errors of their own soon after, and a loaded launcher
  // may reap one of those first. So the others get a short grace to end,
  // and the error names the cause (CauseOfFailure, also put in *cause) with
  // its last lines, then whoever failed after it.
  absl::Status FailureOf(std::vector<size_t> failed, FailedProcess* cause);

  // The pid of the running process of `role` and `rank`.
  std::optional<pid_t> PidOf(const std::string& role, int rank) const;

  // Stops every process (SIGTERM, then SIGKILL after a grace) and passes on
  // what they wrote last; they stay listed (for their reports) until Clear.
  void StopAll();
  void Clear() { processes_.clear(); }

  const std::vector<Supervised>& processes() const { return processes_; }

 private:
  std::string scratch_;
  std::string job_token_;
  std::string admin_token_;
  std::vector<Supervised> processes_;
};

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_PROCESS_SUPERVISOR_H_
