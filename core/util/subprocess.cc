#include "core/util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/network_namespace.h"

extern char** environ;

namespace strata {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Starts `spec` in a process group of its own. Fails when the program
// cannot be started (exec or namespace errors are reported by the child
// through a close-on-exec pipe).
absl::StatusOr<pid_t> StartProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("RunProcess: empty argv");
  // Build argv and the environment in the parent; the child only execs.
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& name : spec.unset_env) env.erase(name);
  for (const auto& [name, value] : spec.set_env) env[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_fd = -1;
  if (!spec.output_path.empty()) {
    out_fd = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      return absl::InternalError(
          absl::StrCat("cannot open ", spec.output_path, ": ", std::strerror(errno)));
    }
  }
  int exec_pipe[2];  // reports a setns or exec failure back to the parent
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    if (out_fd >= 0) ::close(out_fd);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (out_fd >= 0) ::close(out_fd);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (out_fd >= 0) {
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(out_fd, STDERR_FILENO);
    }
    int err =
        spec.network_namespace.empty() ? 0 : EnterNetworkNamespace(spec.network_namespace.c_str());
    if (err == 0) {
      ::execvpe(argv[0], argv.data(), envp.data());
      err = errno;
    }
    (void)!::write(exec_pipe[1], &err, sizeof(err));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(exec_pipe[1]);
  if (out_fd >= 0) ::close(out_fd);
  int exec_errno = 0;
  const ssize_t n = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
  ::close(exec_pipe[0]);
  if (n == sizeof(exec_errno)) {
    ::waitpid(pid, nullptr, 0);
    return absl::NotFoundError(absl::StrCat(
        "cannot start ", spec.argv[0],
        spec.network_namespace.empty() ? "" : absl::StrCat(" in ", spec.network_namespace), ": ",
        std::strerror(exec_errno)));
  }
  return pid;
}

}  // namespace

void StopChildrenOnInterrupt() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

absl::StatusOr<int> RunProcess(const ProcessSpec& spec, absl::Duration timeout) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int> codes, RunProcesses({spec}, timeout));
  return codes[0];
}

absl::StatusOr<std::vector<int>> RunProcesses(const std::vector<ProcessSpec>& specs,
                                              absl::Duration timeout) {
  std::vector<pid_t> pids;
  // SIGTERM first, so a launcher among them can tear down what it built
  // (an emulated network); SIGKILL for whatever still runs after 5 s.
  auto kill_all = [&pids] {
    for (pid_t pid : pids) {
      if (pid > 0) ::kill(-pid, SIGTERM);
    }
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    for (pid_t pid : pids) {
      if (pid <= 0) continue;
      while (::waitpid(pid, nullptr, WNOHANG) == 0) {
        if (absl::Now() > give_up) {
          ::kill(-pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          break;
        }
        ::usleep(10000);
      }
    }
  };
  for (const ProcessSpec& spec : specs) {
    absl::StatusOr<pid_t> pid = StartProcess(spec);
    if (!pid.ok()) {
      kill_all();
      return pid.status();
    }
    pids.push_back(*pid);
  }
  std::vector<int> codes(specs.size(), -1);
  size_t running = specs.size();
  const absl::Time deadline = absl::Now() + timeout;
  const bool interruptible =
      std::any_of(specs.begin(), specs.end(), [](const ProcessSpec& s) { return s.interruptible; });
  while (running > 0) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (pids[i] <= 0) continue;
      int status = 0;
      const pid_t r = ::waitpid(pids[i], &status, WNOHANG);
      if (r < 0 && errno != EINTR) {
        kill_all();
        return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
      }
      if (r != pids[i]) continue;
      codes[i] = ExitCode(status);
      pids[i] = -1;
      --running;
      if (codes[i] != 0 && running > 0) {  // a failed rank: stop the others
        for (size_t j = 0; j < pids.size(); ++j) {
          if (pids[j] > 0) codes[j] = 128 + SIGKILL;
        }
        kill_all();
        return codes;
      }
    }
    if (running > 0 && g_interrupted && interruptible) {
      kill_all();
      return absl::CancelledError("interrupted: every started process was stopped");
    }
    if (running > 0 && absl::Now() > deadline) {
      kill_all();
      return absl::DeadlineExceededError(absl::StrCat(
          absl::StrJoin(specs.front().argv, " "), specs.size() > 1 ? " (and the others)" : "",
          " did not finish within ", absl::FormatDuration(timeout), " and was killed"));
    }
    if (running > 0) ::usleep(5000);
  }
  return codes;
}

std::string FileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace strata
