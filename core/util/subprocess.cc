#include "core/util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

extern char** environ;

namespace strata {

absl::StatusOr<int> RunProcess(const ProcessSpec& spec, absl::Duration timeout) {
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
  int exec_pipe[2];  // reports an exec failure back to the parent
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
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
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
    return absl::NotFoundError(
        absl::StrCat("cannot start ", spec.argv[0], ": ", std::strerror(exec_errno)));
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    if (r < 0 && errno != EINTR) {
      return absl::InternalError(absl::StrCat("waitpid: ", std::strerror(errno)));
    }
    if (absl::Now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return absl::DeadlineExceededError(
          absl::StrCat(absl::StrJoin(spec.argv, " "), " did not finish within ",
                       absl::FormatDuration(timeout), " and was killed"));
    }
    ::usleep(5000);
  }
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
