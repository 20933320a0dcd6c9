// ConditionDriver: the conditions a local cluster runs under, and their
// changes while it runs. It makes the emulated network a plan asks for (at
// its first link rate; on loopback, saying so, where network namespaces
// cannot be made) and the cgroups of its CPU limits, then, called on every
// turn of the launcher's loop, makes each change of --bandwidth-schedule
// and --cpu-schedule as its time comes (timed from Create), writing each to
// launcher.jsonl beside the records.
//
//   STRATA_ASSIGN_OR_RETURN(auto conditions, ConditionDriver::Create(plan, o.latency));
//   HostPlace host = conditions->HostOf(p.host);
//   STRATA_RETURN_IF_ERROR(conditions->Apply(pid_of));  // in the loop
#ifndef STRATA_TOOLS_LAUNCH_CONDITION_DRIVER_H_
#define STRATA_TOOLS_LAUNCH_CONDITION_DRIVER_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/train/metrics_writer.h"
#include "tools/launch/launch_plan.h"
#include "tools/netem/bandwidth_schedule.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/netem/emulated_network.h"

namespace strata {

class ConditionDriver {
 public:
  // The running process of a role and rank (nullopt: none runs).
  using PidOf = std::function<std::optional<pid_t>(const std::string& role, int rank)>;

  // Fails when the CPU limits have no writable cgroup controller, when the
  // rate or latency is malformed, or when a bandwidth schedule has no
  // emulated network to change.
  static absl::StatusOr<std::unique_ptr<ConditionDriver>> Create(const LaunchPlan& plan,
                                                                 const std::string& latency);

  // Writes each change made from now on to `records_dir`/launcher.jsonl
  // when there are changes to come and records_dir is set.
  absl::Status RecordChangesIn(const std::string& records_dir);

  // Where a process of the plan on `host` runs (loopback without a network).
  HostPlace HostOf(int host) const;

  // Makes every change that has come due. An error (tc or the kernel
  // refused a change) names the flag; the job must stop, since it would
  // run under conditions it did not ask for.
  absl::Status Apply(const PidOf& pid_of);

  // A new start of the cluster: its processes get the CPU limits in force.
  void Restart();

 private:
  ConditionDriver() = default;

  absl::Time launched_ = absl::Now();
  std::unique_ptr<EmulatedNetwork> network_;
  std::optional<ScheduledRates> rates_;
  std::optional<ScheduledCpuLimits> cpu_limits_;
  std::unique_ptr<CpuLimiter> limiter_;
  std::optional<MetricsWriter> changes_;
};

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_CONDITION_DRIVER_H_
