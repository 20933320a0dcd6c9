#include "tools/launch/launch_plan.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "flags/cluster_flags.h"
#include "tools/launch/role_commands.h"

namespace strata {
namespace {

std::string LabelOf(const std::string& role, int rank) {
  return absl::StrCat(role == "server"      ? "server"
                      : role == "fc_worker" ? "fc worker"
                                            : "worker",
                      " ", rank);
}

// How many processes of `role` the cluster has.
int CountOf(const ClusterLaunchOptions& o, const std::string& role) {
  if (role == "server") return o.servers;
  if (role == "conv_worker") return o.conv_workers;
  return o.mode == "stanza" ? o.fc_workers : 0;
}

// A process a CPU flag names must be one of the cluster's.
absl::Status CheckNamedProcess(const ClusterLaunchOptions& o, const char* flag,
                               const std::string& process, const std::string& role, int rank) {
  const int count = CountOf(o, role);
  if (rank < count) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, ": the cluster has no ", process, " (",
                                                 count, " ", role, count == 1 ? "" : "s", ")"));
}

// The options' own contradictions, before anything is parsed.
absl::Status CheckOptions(const ClusterLaunchOptions& o) {
  if (!o.port_range.empty() && o.bandwidth.empty() && o.bandwidth_schedule.empty() &&
      o.transport != "tcp") {
    return absl::InvalidArgumentError("--port-range needs tcp: add --transport tcp");
  }
  if (o.mode != "stanza" && o.mode != "ps") {
    return absl::InvalidArgumentError(absl::StrCat("unknown cluster mode ", o.mode));
  }
  if (o.transport != "ipc" && o.transport != "tcp") {
    return absl::InvalidArgumentError(
        absl::StrCat("--transport ", o.transport, ": use ipc or tcp"));
  }
  if (o.colocate_servers && o.servers != o.conv_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("colocated servers need one server per conv worker, got ", o.servers,
                     " servers and ", o.conv_workers, " conv workers"));
  }
  if (!o.bandwidth_schedule.empty() && !o.bandwidth.empty()) {
    return absl::InvalidArgumentError(
        "--bandwidth and --bandwidth-schedule both give the link rate: use one");
  }
  return absl::OkStatus();
}

// Where a process binds and what it advertises.
struct Binding {
  std::string bind;
  std::string advertise;  // "" = what it binds
};

Binding BindingAt(const ClusterLaunchOptions& o, const HostPlace& host) {
  const std::string ports = o.port_range.empty() ? "0" : o.port_range;
  if (host.address.empty()) {
    const bool ipc = o.transport == "ipc" && o.port_range.empty();
    return {ipc ? "ipc://*" : "tcp://127.0.0.1:" + ports, ""};
  }
  return {"tcp://0.0.0.0:" + ports, host.address};
}

void AddServingFlags(const Binding& b, std::vector<std::string>& argv) {
  argv.insert(argv.end(), {"--bind", b.bind});
  if (!b.advertise.empty()) argv.insert(argv.end(), {"--advertise", b.advertise});
}

std::string RecordsPath(const std::string& records_dir, const PlannedProcess& p) {
  return (std::filesystem::path(records_dir) / absl::StrCat(p.role, "_", p.rank, ".jsonl"))
      .string();
}

}  // namespace

absl::StatusOr<LaunchPlan> PlanLocalCluster(const ClusterLaunchOptions& o, int cpus_online) {
  STRATA_RETURN_IF_ERROR(CheckOptions(o));
  LaunchPlan plan;
  plan.stanza = o.mode == "stanza";
  plan.jobs = std::max<size_t>(1, o.job_configs.size());
  plan.several = !o.job_configs.empty();
  plan.first_rate = o.bandwidth;
  if (!o.bandwidth_schedule.empty()) {
    STRATA_ASSIGN_OR_RETURN(BandwidthSchedule schedule,
                            ParseBandwidthSchedule(o.bandwidth_schedule));
    plan.first_rate = schedule.front().rate;
    plan.bandwidth_schedule = std::move(schedule);
  }
  std::map<std::pair<std::string, int>, std::vector<int>> pins;
  if (!o.cpu_pin.empty()) {
    STRATA_ASSIGN_OR_RETURN(const std::vector<CpuPin> parsed, ParseCpuPins(o.cpu_pin, cpus_online));
    for (const CpuPin& pin : parsed) {
      STRATA_RETURN_IF_ERROR(CheckNamedProcess(o, "--cpu-pin", pin.process, pin.role, pin.rank));
      pins[{pin.role, pin.rank}] = pin.cpus;
    }
  }
  if (!o.cpu_schedule.empty()) {
    STRATA_ASSIGN_OR_RETURN(CpuSchedule schedule, ParseCpuSchedule(o.cpu_schedule));
    for (const CpuLimitChange& c : schedule) {
      STRATA_RETURN_IF_ERROR(CheckNamedProcess(o, "--cpu-schedule", c.process, c.role, c.rank));
    }
    plan.cpu_schedule = std::move(schedule);
  }
  const int fc_workers = CountOf(o, "fc_worker");
  if (!plan.first_rate.empty()) {
    plan.emulated_hosts = (o.colocate_servers ? 0 : o.servers) + o.conv_workers + fc_workers;
  }
  int next_host = 0;
  const auto add = [&](const std::string& role, int rank, int host) {
    const auto pinned = pins.find({role, rank});
    plan.processes.push_back({role, rank, LabelOf(role, rank), host,
                              pinned == pins.end() ? std::vector<int>{} : pinned->second});
  };
  for (int r = 0; r < o.servers; ++r) add("server", r, next_host++);
  for (int f = 0; f < fc_workers; ++f) add("fc_worker", f, next_host++);
  for (int w = 0; w < o.conv_workers; ++w)
    add("conv_worker", w, o.colocate_servers ? w : next_host++);
  return plan;
}

void LeaveConvWorkersFrom(int conv_workers, LaunchPlan& plan) {
  plan.processes.erase(std::remove_if(plan.processes.begin(), plan.processes.end(),
                                      [conv_workers](const PlannedProcess& p) {
                                        return p.role == "conv_worker" && p.rank >= conv_workers;
                                      }),
                       plan.processes.end());
}

std::vector<std::string> CommandOf(const ClusterLaunchOptions& o, const PlannedProcess& p,
                                   const HostPlace& host, const std::string& coordinator,
                                   const LaunchFiles& files) {
  const Binding binding = BindingAt(o, host);
  std::vector<std::string> argv;
  if (p.role == "server" && p.rank == 0) {
    // Told where it will be: its ipc binding, or its host with the port it
    // binds (its ready file then says which).
    const std::string where =
        absl::StartsWith(binding.bind, "ipc://")
            ? binding.bind
            : absl::StrCat("tcp://", host.address.empty() ? "127.0.0.1" : host.address, ":0");
    argv = ServerCommand(o, 0, where);
    AddServingFlags(binding, argv);
    argv.insert(argv.end(), {"--ready-file", files.ready, "--lost-nodes-out", files.lost_nodes});
    return argv;
  }
  if (p.role == "server") {
    argv = ServerCommand(o, p.rank, coordinator);
    AddServingFlags(binding, argv);
    return argv;
  }
  if (p.role == "fc_worker") {
    argv = FcWorkerCommand(o, p.rank, coordinator, files.summary);
    AddServingFlags(binding, argv);
  } else {
    argv = ConvWorkerCommand(o, p.rank, coordinator, files.summary);
  }
  if (!files.records_dir.empty()) {
    argv.insert(argv.end(), {"--records-out", RecordsPath(files.records_dir, p)});
  }
  return argv;
}

std::vector<TraceSource> RecordFilesOf(const LaunchPlan& plan, const std::string& records_dir) {
  std::vector<TraceSource> files;
  if (records_dir.empty()) return files;
  for (const PlannedProcess& p : plan.processes) {
    if (p.role == "server") continue;
    const std::string path = RecordsPath(records_dir, p);
    // A process of several jobs writes one file per job (PathForJob).
    for (size_t job = 1; job <= plan.jobs; ++job) {
      files.push_back({plan.several ? PathForJob(path, job) : path, job});
    }
  }
  return files;
}

}  // namespace strata
