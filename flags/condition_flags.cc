#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, bandwidth_schedule, "",
          "ps, stanza: instead of --bandwidth, link rates that change while the job runs, "
          "RATE@TIME,... from the launch (e.g. 1gbit@0,100mbit@60s,1gbit@120s; tc changes the "
          "emulated links in place)");
ABSL_FLAG(std::string, cpu_schedule, "",
          "ps, stanza: CPU limits of some processes that change while the job runs (a "
          "straggler), PROCESS=LIMIT@TIME,... from the launch, PROCESS server<r>, conv<r> or "
          "fc<r>, LIMIT a percentage of one core or none (e.g. conv1=25%@30s,conv1=none@90s; "
          "cgroup CPU quotas, needs root)");
ABSL_FLAG(std::string, cpu_pin, "",
          "ps, stanza: the CPUs some processes run on, PROCESS=CPUS,... (e.g. "
          "conv0=0,conv1=1,server0=0-1; CPUS a CPU, a range, or several joined by +): each "
          "emulated host's own cores, as a real cluster's hosts have");

namespace strata {

ConditionFlags ConditionsFromFlags() {
  return {absl::GetFlag(FLAGS_bandwidth_schedule), absl::GetFlag(FLAGS_cpu_schedule),
          absl::GetFlag(FLAGS_cpu_pin)};
}

}  // namespace strata
