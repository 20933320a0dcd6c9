#include "tools/launch/condition_driver.h"

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/log.h"

namespace strata {

absl::StatusOr<std::unique_ptr<ConditionDriver>> ConditionDriver::Create(
    const LaunchPlan& plan, const std::string& latency) {
  std::unique_ptr<ConditionDriver> driver(new ConditionDriver());
  if (plan.cpu_schedule.has_value()) {
    STRATA_ASSIGN_OR_RETURN(driver->limiter_, CpuLimiter::Create());
    driver->cpu_limits_.emplace(*plan.cpu_schedule);
    LogInfo("cpu schedule: limits through %s", driver->limiter_->description().c_str());
  }
  if (plan.emulated_hosts > 0) {
    std::string why;
    STRATA_ASSIGN_OR_RETURN(driver->network_,
                            EmulateOrFallBack(plan.first_rate, latency, plan.emulated_hosts, &why));
    const EmulatedNetwork* network = driver->network_.get();
    if (network == nullptr) {
      LogInfo("%s (%s); running on loopback instead", kNoNetworkNotice, why.c_str());
    } else {
      LogInfo("emulated network: %d hosts (%s-%s), each link %s, %g ms one way",
              plan.emulated_hosts, network->host_address(0).c_str(),
              network->host_address(plan.emulated_hosts - 1).c_str(),
              FormatBandwidth(network->options().bytes_per_second).c_str(),
              network->options().latency_ms);
    }
  }
  if (plan.bandwidth_schedule.has_value()) {
    if (driver->network_ == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--bandwidth-schedule changes the links of an emulated network, and none could be "
          "made here (",
          kNoNetworkNotice, ": see above)"));
    }
    driver->rates_.emplace(*plan.bandwidth_schedule);
  }
  return driver;
}

absl::Status ConditionDriver::RecordChangesIn(const std::string& records_dir) {
  const bool changes_to_come = rates_.has_value() || cpu_limits_.has_value();
  STRATA_ASSIGN_OR_RETURN(
      MetricsWriter writer,
      MetricsWriter::Open(records_dir.empty() || !changes_to_come
                              ? ""
                              : (std::filesystem::path(records_dir) / "launcher.jsonl").string()));
  changes_.emplace(std::move(writer));
  return absl::OkStatus();
}

HostPlace ConditionDriver::HostOf(int host) const {
  if (network_ == nullptr) return {};
  return {network_->namespace_path(host), network_->host_address(host)};
}

absl::Status ConditionDriver::Apply(const PidOf& pid_of) {
  const double since_launch = absl::ToDoubleSeconds(absl::Now() - launched_);
  std::vector<ScheduledChange> made;
  if (rates_.has_value()) {
    STRATA_RETURN_IF_ERROR(
        WithContext(rates_->Apply(since_launch, *network_, &made), "--bandwidth-schedule"));
  }
  if (cpu_limits_.has_value()) {
    STRATA_RETURN_IF_ERROR(
        WithContext(cpu_limits_->Apply(since_launch, pid_of, *limiter_, &made), "--cpu-schedule"));
  }
  // When each change was made, on the clock the iteration records use, and
  // when the schedule had it due (seconds from the launch).
  for (const ScheduledChange& change : made) {
    if (!changes_.has_value()) break;
    changes_->Write({{"event", "condition"},
                     {"what", change.what},
                     {"due", change.due_seconds},
                     {"start", MonotonicSeconds()}});
  }
  return absl::OkStatus();
}

void ConditionDriver::Restart() {
  if (cpu_limits_.has_value()) cpu_limits_->Restart();
}

}  // namespace strata
