#include "core/process/subprocess.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/process/network_namespace.h"
#include "core/status.h"
#include "core/util/clock.h"

extern char** environ;

namespace strata {

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void OnInterrupt(int) { g_interrupted = 1; }

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("cannot start a process: empty argv");
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

  int out_fd = -1;   // the child's stdout and stderr
  int read_fd = -1;  // our end of the pipe
  if (spec.output_to_pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    read_fd = fds[0];
    out_fd = fds[1];
  } else if (!spec.output_path.empty()) {
    out_fd = ::open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) {
      return absl::InternalError(
          absl::StrCat("cannot open ", spec.output_path, ": ", std::strerror(errno)));
    }
  }
  auto close_fds = [&] {
    if (out_fd >= 0) ::close(out_fd);
    if (read_fd >= 0) ::close(read_fd);
  };
  int exec_pipe[2];  // reports a setns or exec failure back to the parent
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    close_fds();
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      close_fds();
      ::close(exec_pipe[0]);
      ::close(exec_pipe[1]);
      return absl::InvalidArgumentError(absl::StrCat("cannot run ", spec.argv[0], " on CPU ", cpu));
    }
    CPU_SET(cpu, &cpus);
  }
  std::fflush(stdout);  // or the child would print our buffered output again
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    close_fds();
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    int err = 0;
    if (spec.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);  // the parent died before the prctl
    }
    if (out_fd >= 0) {
      ::dup2(out_fd, STDOUT_FILENO);
      ::dup2(out_fd, STDERR_FILENO);
    }
    if (!spec.network_namespace.empty())
      err = EnterNetworkNamespace(spec.network_namespace.c_str());
    if (err == 0 && !spec.cpus.empty() && ::sched_setaffinity(0, sizeof(cpus), &cpus) != 0) {
      err = errno;
    }
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
    if (read_fd >= 0) ::close(read_fd);
    return absl::NotFoundError(absl::StrCat(
        "cannot start ", spec.argv[0],
        spec.network_namespace.empty() ? "" : absl::StrCat(" in ", spec.network_namespace), ": ",
        std::strerror(exec_errno)));
  }
  if (read_fd >= 0) ::fcntl(read_fd, F_SETFL, O_NONBLOCK);
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, read_fd));
}

ChildProcess::~ChildProcess() {
  if (!exited_) Stop(absl::Seconds(3));
  if (output_fd_ >= 0) ::close(output_fd_);
}

void ChildProcess::Reaped(int status) {
  exited_ = true;
  wait_status_ = status;
}

std::optional<int> ChildProcess::Poll() {
  if (!exited_) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    Reaped(status);
  }
  return ExitCode(wait_status_);
}

int ChildProcess::Wait() {
  while (!exited_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, 0);
    if (r == pid_) Reaped(status);
    if (r < 0 && errno != EINTR) Reaped(0);  // not our child any more
  }
  return ExitCode(wait_status_);
}

void ChildProcess::Signal(int signal) {
  if (!exited_) ::kill(-pid_, signal);
}

int ChildProcess::Stop(absl::Duration grace) {
  Signal(SIGTERM);
  const absl::Time give_up = MonotonicNow() + grace;
  while (!Poll().has_value()) {
    if (MonotonicNow() > give_up) {
      Signal(SIGKILL);
      return Wait();
    }
    ::usleep(10000);
  }
  return ExitCode(wait_status_);
}

void StopChildrenOnInterrupt() {
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

bool Interrupted() { return g_interrupted != 0; }

absl::StatusOr<int> RunProcess(const ProcessSpec& spec, absl::Duration timeout) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int> codes, RunProcesses({spec}, timeout));
  return codes[0];
}

absl::StatusOr<std::vector<int>> RunProcesses(const std::vector<ProcessSpec>& specs,
                                              absl::Duration timeout) {
  std::vector<std::unique_ptr<ChildProcess>> children;
  // SIGTERM first, so a launcher among them can tear down what it built
  // (an emulated network); SIGKILL for whatever still runs after 5 s.
  auto stop_all = [&children] {
    for (auto& c : children) c->Signal(SIGTERM);
    for (auto& c : children) c->Stop(absl::Seconds(5));
  };
  for (const ProcessSpec& spec : specs) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> child = ChildProcess::Start(spec);
    if (!child.ok()) {
      stop_all();
      return child.status();
    }
    children.push_back(*std::move(child));
  }
  std::vector<int> codes(specs.size(), -1);
  size_t running = specs.size();
  const absl::Time deadline = MonotonicNow() + timeout;
  const bool interruptible =
      std::any_of(specs.begin(), specs.end(), [](const ProcessSpec& s) { return s.interruptible; });
  while (running > 0) {
    for (size_t i = 0; i < children.size(); ++i) {
      if (codes[i] >= 0) continue;
      const std::optional<int> code = children[i]->Poll();
      if (!code.has_value()) continue;
      codes[i] = *code;
      --running;
      if (codes[i] != 0 && running > 0) {  // a failed rank: stop the others
        for (size_t j = 0; j < children.size(); ++j) {
          if (codes[j] < 0) codes[j] = 128 + SIGKILL;
        }
        stop_all();
        return codes;
      }
    }
    if (running > 0 && g_interrupted && interruptible) {
      stop_all();
      return absl::CancelledError("interrupted: every started process was stopped");
    }
    if (running > 0 && MonotonicNow() > deadline) {
      stop_all();
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
