// Subprocess: the one way Strata starts other programs. A ChildProcess
// runs in a process group of its own, with a modified environment, its
// output in a file or on a pipe, optionally inside a network namespace and
// tied to our life; it is signalled as a group, and stopped and reaped when
// its owner lets go of it, so no process is left behind. RunProcess and
// RunProcesses run programs to completion with a deadline.
//
//   ProcessSpec spec;
//   spec.argv = {"/usr/bin/python3", "peer.py", "--steps", "300"};
//   spec.unset_env = {"OPENBLAS_CORETYPE"};
//   spec.set_env = {{"OMP_NUM_THREADS", "2"}};
//   spec.output_path = "/tmp/peer.log";
//   STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, absl::Minutes(10)));
#ifndef STRATA_CORE_PROCESS_SUBPROCESS_H_
#define STRATA_CORE_PROCESS_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace strata {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] is the program (searched in PATH)
  std::vector<std::string> unset_env;
  std::vector<std::pair<std::string, std::string>> set_env;
  std::string output_path;  // stdout and stderr go here; "" = inherit
  // Run inside this network namespace (/run/netns/NAME); "" = ours.
  std::string network_namespace;
  // Whether StopChildrenOnInterrupt's Ctrl-C stops it. Clean-up commands
  // (removing an emulated network) say false: they must run to the end.
  bool interruptible = true;
  // stdout and stderr on a pipe (ChildProcess::output_fd) instead.
  bool output_to_pipe = false;
  // SIGKILL when this process dies, however it dies.
  bool die_with_parent = false;
  // Run only on these CPUs (every thread it ever starts; set before it
  // runs); empty = any.
  std::vector<int> cpus;
};

class ChildProcess {
 public:
  // Fails, naming the program, when it cannot be started (exec or
  // namespace errors come back from the child).
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const ProcessSpec& spec);
  // Stops (SIGTERM, then SIGKILL after 3 s) and reaps a child still running.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The read end of the output pipe (non-blocking), or -1.
  int output_fd() const { return output_fd_; }
  // The exit code (128 + signal when killed by one) once the child has
  // exited; nullopt while it runs. Never blocks.
  std::optional<int> Poll();
  // Blocks until the child exits; its exit code.
  int Wait();
  // The raw wait status, once exited (for WIFSIGNALED and friends).
  int wait_status() const { return wait_status_; }
  bool exited() const { return exited_; }
  // `signal` to the child's process group.
  void Signal(int signal);
  // SIGTERM to the group, SIGKILL after `grace`; reaps. Its exit code.
  int Stop(absl::Duration grace);

 private:
  ChildProcess(pid_t pid, int output_fd) : pid_(pid), output_fd_(output_fd) {}
  void Reaped(int status);

  pid_t pid_;
  int output_fd_;
  bool exited_ = false;
  int wait_status_ = 0;
};

// Runs the process to completion and returns its exit code (128 + signal if
// it was killed by a signal). When `timeout` passes first, the process (and
// its process group) is stopped and DeadlineExceeded is returned. Fails when
// the program cannot be started.
absl::StatusOr<int> RunProcess(const ProcessSpec& spec, absl::Duration timeout);

// Runs every process at once (the ranks of a distributed peer) and returns
// their exit codes in order. When one exits with an error the others are
// killed (their code reads 128 + SIGKILL), so a failed rank never leaves
// the rest waiting for it. DeadlineExceeded when `timeout` passes first.
absl::StatusOr<std::vector<int>> RunProcesses(const std::vector<ProcessSpec>& specs,
                                              absl::Duration timeout);

// From now on SIGINT and SIGTERM (Ctrl-C) make a running RunProcess or
// RunProcesses stop its processes (SIGTERM, then SIGKILL after 5 s) and
// return Cancelled, instead of killing this process and leaving them
// running. For tools that run other programs (strata_bench).
void StopChildrenOnInterrupt();
// Whether Ctrl-C (or SIGTERM) came since StopChildrenOnInterrupt: work done
// in this process (a long training) checks it to stop as well.
bool Interrupted();

// The last `max_bytes` of a file (for showing the end of a failed run's log).
std::string FileTail(const std::string& path, size_t max_bytes);

}  // namespace strata

#endif  // STRATA_CORE_PROCESS_SUBPROCESS_H_
