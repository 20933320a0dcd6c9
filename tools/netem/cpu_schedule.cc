#include "tools/netem/cpu_schedule.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/util/log.h"
#include "core/util/process_name.h"
#include "tools/netem/bandwidth_schedule.h"

namespace strata {
namespace {

// The shortest CFS quota the kernel takes. Each limit's period is as short
// as that allows (4 ms for a quarter of a core), so that a limited process
// is slowed evenly: with long periods an iteration of a few milliseconds
// runs at full speed on the quota left from the last period, and the
// limit shows only in iterations long enough to use it up.
constexpr int64_t kShortestQuotaMicros = 1000;

// Writes `value` to `path` (a cgroup control file).
absl::Status WriteControl(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write \"", value, "\" to ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CpuSchedule> ParseCpuSchedule(const std::string& text) {
  const auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--cpu-schedule \"", text, "\": ", why,
                                                   " (e.g. conv1=25%@30s,conv1=none@90s)"));
  };
  if (text.empty()) return refuse("empty");
  CpuSchedule schedule;
  for (const std::string& entry : std::vector<std::string>(absl::StrSplit(text, ','))) {
    const std::vector<std::string> at = absl::StrSplit(entry, '@');
    const std::vector<std::string> limit =
        at.size() == 2 ? std::vector<std::string>(absl::StrSplit(at[0], '='))
                       : std::vector<std::string>{};
    if (limit.size() != 2) return refuse(absl::StrCat("entry \"", entry, "\" is not PROCESS=LIMIT@TIME"));
    CpuLimitChange change;
    change.process = limit[0];
    const std::optional<NamedProcess> process = ParseProcessName(limit[0]);
    if (!process.has_value()) {
      return refuse(absl::StrCat("entry \"", entry, "\": \"", limit[0],
                                 "\" is not a process (", kProcessNameForms, ")"));
    }
    change.role = process->role;
    change.rank = process->rank;
    if (limit[1] != "none") {
      double percent = 0;
      if (!absl::EndsWith(limit[1], "%") ||
          !absl::SimpleAtod(limit[1].substr(0, limit[1].size() - 1), &percent) ||
          !(percent >= 1 && percent <= 100000)) {
        return refuse(absl::StrCat("entry \"", entry, "\": limit \"", limit[1],
                                   "\" is not none or a percentage of one core from 1% up"));
      }
      change.cores = percent / 100;
    }
    const std::optional<double> seconds = ParseScheduleOffset(at[1]);
    if (!seconds.has_value()) {
      return refuse(absl::StrCat("entry \"", entry, "\": time \"", at[1],
                                 "\" is not 0 or a number with ms, s or m"));
    }
    if (!schedule.empty() && *seconds < schedule.back().at_seconds) {
      return refuse(absl::StrCat("entry \"", entry, "\" is earlier than the one before"));
    }
    change.at_seconds = *seconds;
    schedule.push_back(std::move(change));
  }
  return schedule;
}

absl::StatusOr<std::vector<CpuPin>> ParseCpuPins(const std::string& text, int cpu_count) {
  const auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cpu-pin \"", text, "\": ", why, " (e.g. conv0=0,conv1=1,server0=0-1)"));
  };
  if (text.empty()) return refuse("empty");
  std::vector<CpuPin> pins;
  for (const std::string& entry : std::vector<std::string>(absl::StrSplit(text, ','))) {
    const std::vector<std::string> kv = absl::StrSplit(entry, '=');
    if (kv.size() != 2) return refuse(absl::StrCat("entry \"", entry, "\" is not PROCESS=CPUS"));
    const std::optional<NamedProcess> process = ParseProcessName(kv[0]);
    if (!process.has_value()) {
      return refuse(absl::StrCat("entry \"", entry, "\": \"", kv[0],
                                 "\" is not a process (", kProcessNameForms, ")"));
    }
    CpuPin pin{kv[0], process->role, process->rank, {}};
    for (const std::string& part : std::vector<std::string>(absl::StrSplit(kv[1], '+'))) {
      const std::vector<std::string> range = absl::StrSplit(part, '-');
      int first = -1, last = -1;
      if (range.size() > 2 || !absl::SimpleAtoi(range[0], &first) ||
          !absl::SimpleAtoi(range.back(), &last) || first < 0 || last < first) {
        return refuse(absl::StrCat("entry \"", entry, "\": \"", part,
                                   "\" is not a CPU or a range of them (2, 0-3; joined by +)"));
      }
      if (last >= cpu_count) {
        return refuse(absl::StrCat("entry \"", entry, "\": CPU ", last, " does not exist (this ",
                                   "machine has CPUs 0-", cpu_count - 1, ")"));
      }
      for (int cpu = first; cpu <= last; ++cpu) pin.cpus.push_back(cpu);
    }
    pins.push_back(std::move(pin));
  }
  return pins;
}

namespace {

// Removes the groups (and their process groups) that a limiter of a process
// that no longer runs left under `hierarchy` (one killed with SIGKILL).
void RemoveStaleGroups(const std::string& hierarchy) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(hierarchy, error)) {
    const std::string name = entry.path().filename().string();
    int owner = 0;
    if (!absl::StartsWith(name, "strata-") || !absl::SimpleAtoi(name.substr(7), &owner) ||
        owner <= 0 || ::kill(owner, 0) == 0 || errno != ESRCH) {
      continue;
    }
    for (const auto& group : std::filesystem::directory_iterator(entry.path(), error)) {
      if (!group.is_directory()) continue;
      std::ifstream procs(group.path() / "cgroup.procs");
      for (std::string pid; std::getline(procs, pid);) {
        (void)WriteControl(hierarchy + "/cgroup.procs", pid);
      }
      ::rmdir(group.path().c_str());
    }
    if (::rmdir(entry.path().c_str()) == 0) {
      LogInfo("cpu limits: removed %s, left by a launcher that is gone", entry.path().c_str());
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuLimiter>> CpuLimiter::Create() {
  // cgroup v1's cpu controller, or a v2 hierarchy that offers cpu.
  struct Candidate {
    std::string hierarchy;
    bool v2;
  };
  std::vector<std::string> tried;
  for (const Candidate& c : {Candidate{"/sys/fs/cgroup/cpu", false},
                             Candidate{"/sys/fs/cgroup/cpu,cpuacct", false},
                             Candidate{"/sys/fs/cgroup", true},
                             Candidate{"/sys/fs/cgroup/unified", true}}) {
    const std::string probe = c.hierarchy + (c.v2 ? "/cgroup.subtree_control" : "/cpu.cfs_quota_us");
    if (!std::filesystem::exists(probe)) continue;
    if (c.v2) {
      std::ifstream controllers(c.hierarchy + "/cgroup.controllers");
      std::string line;
      std::getline(controllers, line);
      if (line.find("cpu") == std::string::npos) {
        tried.push_back(absl::StrCat(c.hierarchy, " (cgroup v2 without the cpu controller)"));
        continue;
      }
      (void)WriteControl(c.hierarchy + "/cgroup.subtree_control", "+cpu");
    }
    RemoveStaleGroups(c.hierarchy);
    const std::string root = absl::StrCat(c.hierarchy, "/strata-", ::getpid());
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
      tried.push_back(absl::StrCat(root, " (", std::strerror(errno), ")"));
      continue;
    }
    if (c.v2) (void)WriteControl(root + "/cgroup.subtree_control", "+cpu");
    return std::unique_ptr<CpuLimiter>(new CpuLimiter(root, c.v2));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "CPU limits need a writable cgroup CPU controller, and none was found",
      tried.empty() ? "" : absl::StrCat(" (tried ", absl::StrJoin(tried, ", "), ")"),
      "; run as root on a machine with cgroups, or leave out --cpu-schedule"));
}

CpuLimiter::CpuLimiter(std::string root, bool v2)
    : root_(std::move(root)),
      v2_(v2),
      description_(absl::StrCat(v2 ? "cgroup v2 (" : "cgroup v1 (", root_, ")")) {}

CpuLimiter::~CpuLimiter() {
  for (const auto& [name, path] : groups_) {
    std::ifstream procs(path + "/cgroup.procs");
    for (std::string line; std::getline(procs, line);) {
      pid_t pid = 0;
      if (absl::SimpleAtoi(line, &pid)) (void)ReturnHome(pid);
    }
    ::rmdir(path.c_str());
  }
  ::rmdir(root_.c_str());
}

std::string CpuLimiter::OwnGroupOf(pid_t pid) const {
  const std::string hierarchy = std::filesystem::path(root_).parent_path().string();
  std::ifstream in(absl::StrCat("/proc/", pid, "/cgroup"));
  for (std::string line; std::getline(in, line);) {
    // "0::/path" (v2) or "4:cpu,cpuacct:/path" (v1).
    const std::vector<std::string> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    const std::vector<absl::string_view> controllers = absl::StrSplit(fields[1], ',');
    const bool ours = v2_ ? fields[0] == "0" && fields[1].empty()
                          : absl::c_linear_search(controllers, "cpu");
    if (!ours) continue;
    // Seen from another cgroup namespace the path may not exist here.
    const std::string path = hierarchy + fields[2];
    if (std::filesystem::is_directory(path)) return path;
  }
  return hierarchy;
}

absl::Status CpuLimiter::ReturnHome(pid_t pid) {
  const auto origin = origins_.find(pid);
  const std::string home = origin != origins_.end()
                               ? origin->second
                               : std::filesystem::path(root_).parent_path().string();
  if (origin != origins_.end()) origins_.erase(origin);
  return WriteControl(home + "/cgroup.procs", std::to_string(pid));
}

absl::Status CpuLimiter::Limit(const std::string& name, pid_t pid, std::optional<double> cores) {
  if (!cores.has_value()) {
    if (origins_.count(pid) == 0) return absl::OkStatus();  // never limited
    absl::Status back = ReturnHome(pid);
    // A process that has exited needs nothing.
    return back.ok() || ::kill(pid, 0) != 0 ? absl::OkStatus() : back;
  }
  auto it = groups_.find(name);
  if (it == groups_.end()) {
    const std::string path = absl::StrCat(root_, "/", name);
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make cgroup ", path, ": ", std::strerror(errno)));
    }
    it = groups_.emplace(name, path).first;
  }
  const std::string& path = it->second;
  const int64_t period =
      static_cast<int64_t>(std::llround(kShortestQuotaMicros / std::min(1.0, *cores)));
  const std::string quota = std::to_string(static_cast<int64_t>(std::llround(*cores * period)));
  if (v2_) {
    STRATA_RETURN_IF_ERROR(WriteControl(path + "/cpu.max", absl::StrCat(quota, " ", period)));
  } else {
    // Lifted, then the new period, then the new quota: no step holds the
    // old quota with the new period.
    STRATA_RETURN_IF_ERROR(WriteControl(path + "/cpu.cfs_quota_us", "-1"));
    STRATA_RETURN_IF_ERROR(WriteControl(path + "/cpu.cfs_period_us", std::to_string(period)));
    STRATA_RETURN_IF_ERROR(WriteControl(path + "/cpu.cfs_quota_us", quota));
  }
  if (origins_.count(pid) == 0) origins_[pid] = OwnGroupOf(pid);
  // Every thread of the process, now and later.
  return WriteControl(path + "/cgroup.procs", std::to_string(pid));
}

absl::Status ScheduledCpuLimits::Apply(
    double seconds, const std::function<std::optional<pid_t>(const std::string&, int)>& pid_of,
    CpuLimiter& limiter, std::vector<ScheduledChange>* made) {
  while (next_ < schedule_.size() && schedule_[next_].at_seconds <= seconds) {
    const CpuLimitChange& change = schedule_[next_];
    const std::optional<pid_t> pid = pid_of(change.role, change.rank);
    if (!pid.has_value()) return absl::OkStatus();  // not started yet: try again later
    STRATA_RETURN_IF_ERROR(limiter.Limit(change.process, *pid, change.cores));
    const std::string what = absl::StrCat(
        change.process, change.cores.has_value() ? absl::StrCat(" limited to ", *change.cores, " cores")
                                                 : " no longer limited");
    LogInfo("cpu schedule: %s (change %zu of %zu, due at %gs, made at %.1fs)", what.c_str(),
            next_ + 1, schedule_.size(), change.at_seconds, seconds);
    if (made != nullptr) made->push_back({what, change.at_seconds});
    ++next_;
  }
  return absl::OkStatus();
}

}  // namespace strata
