// The CPUs of a local cluster's emulated hosts. Hosts of a real cluster
// have cores of their own; the processes of an emulated one share this
// machine's, so a worker given less work lends its cores to one given more,
// and a straggler slows every process alike. Two settings make the CPUs
// behave as separate hosts' do:
//
// CpuPins (`strata_launch --cpu-pin conv0=0,conv1=1`): each process named
// runs only on its CPUs ("2", "0-3", "0+2"; every thread, from its start);
// the others run anywhere.
//
// CpuSchedule: limits on the CPU of some of a local cluster's processes
// that change while the job runs, for `strata_launch --cpu-schedule
// conv1=25%@30s,conv1=none@90s`: the emulated counterpart of a host whose
// CPU a noisy neighbour or a throttled VM takes (a straggler), as
// --bandwidth-schedule is of a link whose rate changes. Each entry names a
// process (server<r>, conv<r>, fc<r>), its limit in percent of one core
// ("25%", "150%") or "none", and the time it takes effect from the launch
// ("0", "500ms", "30s", "2m"); entries are in time order.
//
// CpuLimiter puts a process in a cgroup of its own and sets the cgroup's
// CPU bandwidth (the CFS quota: cgroup v1's cpu.cfs_quota_us, or v2's
// cpu.max) — the kernel then runs the process's threads at most that share
// of each period, as it would on a smaller or busier host. Its cgroups are
// removed when it is destroyed; groups left by a limiter whose process was
// killed outright are removed by the next one created.
//
//   STRATA_ASSIGN_OR_RETURN(CpuSchedule schedule, ParseCpuSchedule(text));
//   STRATA_ASSIGN_OR_RETURN(auto limiter, CpuLimiter::Create());  // refuses without cgroups
//   ScheduledCpuLimits limits(schedule);
//   STRATA_RETURN_IF_ERROR(limits.Apply(seconds_since_launch, pid_of, *limiter));
//
// Not thread-safe.
#ifndef STRATA_TOOLS_NETEM_CPU_SCHEDULE_H_
#define STRATA_TOOLS_NETEM_CPU_SCHEDULE_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/netem/schedule_change.h"

namespace strata {

struct CpuLimitChange {
  double at_seconds = 0;
  std::string process;          // "conv1": role and rank as the launcher names them
  std::string role;             // "server", "conv_worker", "fc_worker"
  int rank = 0;
  std::optional<double> cores;  // the limit in cores (0.25 for "25%"); unset: none
};
using CpuSchedule = std::vector<CpuLimitChange>;

// InvalidArgument naming the entry and the rule it breaks.
absl::StatusOr<CpuSchedule> ParseCpuSchedule(const std::string& text);

struct CpuPin {
  std::string process;  // "conv0"
  std::string role;     // "server", "conv_worker", "fc_worker"
  int rank = 0;
  std::vector<int> cpus;
};
// "conv0=0,conv1=1,server0=0-1": InvalidArgument naming the entry and the
// rule it breaks (a CPU at or above `cpu_count` among them).
absl::StatusOr<std::vector<CpuPin>> ParseCpuPins(const std::string& text, int cpu_count);

class CpuLimiter {
 public:
  // FailedPrecondition, saying why, when this machine gives no writable
  // cgroup CPU controller (no permission, or none mounted).
  static absl::StatusOr<std::unique_ptr<CpuLimiter>> Create();
  // Every process still limited goes back to its own cgroup; the groups
  // are removed.
  ~CpuLimiter();
  CpuLimiter(const CpuLimiter&) = delete;
  CpuLimiter& operator=(const CpuLimiter&) = delete;

  // Limits process `pid` (all its threads) to `cores` cores, or lifts its
  // limit (unset). `name` names its group ("conv1"). The groups sit at the
  // top of the hierarchy (cgroup v2 allows no group beside processes), so a
  // limited process leaves the cgroup it was started in (a Slurm job's, a
  // systemd slice) and its limits until its own limit is lifted, when it
  // goes back there.
  absl::Status Limit(const std::string& name, pid_t pid, std::optional<double> cores);
  // "cgroup v1 (/sys/fs/cgroup/cpu)", for logs.
  const std::string& description() const { return description_; }

 private:
  CpuLimiter(std::string root, bool v2);
  // The cgroup `pid` is in, in this limiter's hierarchy (its root when the
  // path does not show here).
  std::string OwnGroupOf(pid_t pid) const;
  // Moves `pid` back to the cgroup it was in before its first limit.
  absl::Status ReturnHome(pid_t pid);
  std::string root_;  // our group under the hierarchy
  bool v2_;
  std::string description_;
  std::map<std::string, std::string> groups_;  // name -> path
  std::map<pid_t, std::string> origins_;       // a limited process's own cgroup
};

class ScheduledCpuLimits {
 public:
  explicit ScheduledCpuLimits(CpuSchedule schedule) : schedule_(std::move(schedule)) {}
  // Makes every change due by `seconds` that has not been made, and adds
  // to `made` (when given) what each one did ("conv1 limited to 0.25
  // cores") and when it was due. `pid_of` gives a process's pid from its role and rank
  // (nullopt: it is not running, and the change waits for it). The error of
  // a limit the kernel refuses.
  absl::Status Apply(
      double seconds,
      const std::function<std::optional<pid_t>(const std::string& role, int rank)>& pid_of,
      CpuLimiter& limiter, std::vector<ScheduledChange>* made = nullptr);
  // Starts over (a restarted job's new processes get the limits in force).
  void Restart() { next_ = 0; }

 private:
  CpuSchedule schedule_;
  size_t next_ = 0;
};

}  // namespace strata

#endif  // STRATA_TOOLS_NETEM_CPU_SCHEDULE_H_
