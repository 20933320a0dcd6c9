#include "tools/launch/process_supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/net/admission.h"
#include "core/net/traffic.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {
namespace {

constexpr size_t kTailLines = 20;
// How long the other processes of a failed start get to end before the
// cause is chosen.
constexpr absl::Duration kFailureGrace = absl::Milliseconds(500);

}  // namespace

std::string ExitText(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return absl::StrCat("was killed by signal ", WTERMSIG(wait_status));
  return "stopped";
}

ProcessSupervisor::ProcessSupervisor(std::string scratch, std::string job_token,
                                     std::string admin_token)
    : scratch_(std::move(scratch)),
      job_token_(std::move(job_token)),
      admin_token_(std::move(admin_token)) {}

absl::Status ProcessSupervisor::Start(const PlannedProcess& planned,
                                      const std::vector<std::string>& argv,
                                      const std::string& netns) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.cpus = planned.cpus;
  spec.network_namespace = netns;
  spec.output_to_pipe = true;
  spec.die_with_parent = true;  // never outlive the launcher
  spec.set_env = {{"TMPDIR", scratch_}};
  // Secrets travel in the environment, never on a command line.
  auto hand_on = [&spec](const char* name, const std::string& secret) {
    if (secret.empty()) {
      spec.unset_env.push_back(name);
    } else {
      spec.set_env.push_back({name, secret});
    }
  };
  hand_on(kJobTokenEnv, job_token_);
  hand_on(kAdminTokenEnv, planned.role == "server" ? admin_token_ : "");
  Supervised s;
  s.planned = planned;
  STRATA_ASSIGN_OR_RETURN(s.process, ChildProcess::Start(spec));
  processes_.push_back(std::move(s));
  return absl::OkStatus();
}

void ProcessSupervisor::Pump(size_t i) {
  Supervised& s = processes_[i];
  char buf[8192];
  while (true) {
    const ssize_t n = ::read(s.process->output_fd(), buf, sizeof(buf));
    if (n <= 0) break;
    s.partial.append(buf, static_cast<size_t>(n));
  }
  size_t pos;
  while ((pos = s.partial.find('\n')) != std::string::npos) {
    std::string line = s.partial.substr(0, pos);
    s.partial.erase(0, pos + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (absl::StartsWith(line, kTrafficLinePrefix)) {  // summed at the end, not shown
      s.traffic =
          nlohmann::json::parse(line.substr(std::strlen(kTrafficLinePrefix)), nullptr, false);
      continue;
    }
    // Log lines carry their process's name and time; anything else gets
    // them here.
    const bool log_line = IsLogLine(line);
    const std::string shown = log_line || absl::StartsWith(line, "[")
                                  ? line
                                  : absl::StrCat("[", s.planned.label, "] ", line);
    if (log_line) {
      PassLogLine(line);
    } else {
      LogInfo("%s", shown.c_str());
    }
    s.tail.push_back(shown);
    if (s.tail.size() > kTailLines) s.tail.pop_front();
  }
}

ProcessSupervisor::Reaped ProcessSupervisor::WaitAndReap(absl::Duration wait) {
  std::vector<pollfd> fds;
  for (const Supervised& s : processes_) fds.push_back({s.process->output_fd(), POLLIN, 0});
  ::poll(fds.data(), fds.size(), static_cast<int>(absl::ToInt64Milliseconds(wait)));
  Reaped reaped;
  for (size_t i = 0; i < processes_.size(); ++i) {
    ChildProcess& process = *processes_[i].process;
    Pump(i);
    if (process.exited()) continue;
    if (!process.Poll().has_value()) {
      reaped.running = true;
      continue;
    }
    Pump(i);
    const int status = process.wait_status();
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) reaped.failed.push_back(i);
  }
  return reaped;
}

absl::Status ProcessSupervisor::FailureOf(std::vector<size_t> failed, FailedProcess* cause) {
  const auto any_killed = [&] {
    return std::any_of(failed.begin(), failed.end(),
                       [&](size_t i) { return WIFSIGNALED(processes_[i].process->wait_status()); });
  };
  const absl::Time grace_end = absl::Now() + kFailureGrace;
  while (!any_killed() && absl::Now() < grace_end) {
    const Reaped more = WaitAndReap(absl::ZeroDuration());
    failed.insert(failed.end(), more.failed.begin(), more.failed.end());
    if (!more.running) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::vector<FailedProcess> seen;
  for (size_t i : failed) {
    const Supervised& s = processes_[i];
    seen.push_back({s.planned.role, s.planned.rank, WIFSIGNALED(s.process->wait_status())});
  }
  const size_t cause_at = CauseOfFailure(seen);
  *cause = seen[cause_at];
  std::string what_caused, tail, others;
  for (size_t j = 0; j < failed.size(); ++j) {
    const Supervised& s = processes_[failed[j]];
    const std::string what = absl::StrCat(s.planned.label, " ", ExitText(s.process->wait_status()));
    if (j == cause_at) {
      what_caused = what;
      for (const std::string& line : s.tail) tail += "\n  " + line;
    } else {
      others += absl::StrCat(others.empty() ? "" : "; ", what);
    }
  }
  return absl::InternalError(absl::StrCat(
      what_caused, "; stopped the cluster",
      others.empty() ? "" : absl::StrCat(" (after it: ", others, ")"), ". Its last lines:", tail));
}

std::optional<pid_t> ProcessSupervisor::PidOf(const std::string& role, int rank) const {
  for (const Supervised& s : processes_) {
    if (s.planned.role == role && s.planned.rank == rank && !s.process->exited()) {
      return s.process->pid();
    }
  }
  return std::nullopt;
}

void ProcessSupervisor::StopAll() {
  for (Supervised& s : processes_) s.process->Signal(SIGTERM);
  for (size_t i = 0; i < processes_.size(); ++i) {
    processes_[i].process->Stop(absl::Seconds(3));
    Pump(i);
  }
}

}  // namespace strata
