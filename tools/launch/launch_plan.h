// The plan of a local cluster (local_cluster.h): the launch options
// checked, every process in start order with its host and CPUs, and each
// process's command line once the coordinator's address is known. Pure: it
// starts nothing and touches no file, so the plan of every mode is tested
// without a process.
//
// Start order: server 0 (the coordinator: the others are told the address
// it reports), the other servers, the FC workers (stanza), the conv
// workers. On an emulated network each process gets a host of its own in
// that order, except that with colocated servers conv worker i shares
// server i's host.
#ifndef STRATA_TOOLS_LAUNCH_LAUNCH_PLAN_H_
#define STRATA_TOOLS_LAUNCH_LAUNCH_PLAN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/launch/chrome_trace.h"
#include "tools/launch/cluster_launch_options.h"
#include "tools/netem/bandwidth_schedule.h"
#include "tools/netem/cpu_schedule.h"

namespace strata {

struct PlannedProcess {
  std::string role;  // server, fc_worker or conv_worker
  int rank = 0;
  std::string label;  // how the launcher's output names it: "server 0", "fc worker 1", "worker 2"
  int host = 0;       // its host on the emulated network (unused on loopback)
  std::vector<int> cpus;  // the CPUs --cpu-pin gives it; empty: any
};

struct LaunchPlan {
  bool stanza = false;
  size_t jobs = 1;  // the jobs every process runs
  // Several jobs (--jobs): each process tags its files with the job's id
  // (PathForJob).
  bool several = false;
  // Hosts of the emulated network the options ask for (0: none, loopback),
  // and the link rate it starts at (--bandwidth, or the schedule's first).
  int emulated_hosts = 0;
  std::string first_rate;
  std::optional<BandwidthSchedule> bandwidth_schedule;
  std::optional<CpuSchedule> cpu_schedule;
  std::vector<PlannedProcess> processes;  // in start order
};

// InvalidArgument naming the flag when the options contradict each other
// or name a process the cluster lacks; `cpus_online` bounds --cpu-pin.
absl::StatusOr<LaunchPlan> PlanLocalCluster(const ClusterLaunchOptions& o, int cpus_online);

// The plan of a start that carries on without the conv workers from rank
// `conv_workers` on (--lost-conv-worker continue): everyone else keeps
// their host and CPUs.
void LeaveConvWorkersFrom(int conv_workers, LaunchPlan& plan);

// Where a process runs: its network namespace and address on the emulated
// network, or loopback (both empty).
struct HostPlace {
  std::string network_namespace;
  std::string address;
};

// The files the launcher hands its processes.
struct LaunchFiles {
  std::string summary;      // the reporting process's summary (RunSummary JSON)
  std::string records_dir;  // each worker's records as <process>.jsonl; "" = none
  std::string ready;        // server 0's ready file (its address, once it serves)
  std::string lost_nodes;   // where server 0 records the conv workers it declares dead
};

// The command line of `p` placed at `host`: its role's command
// (role_commands.h), where it binds and what it advertises, its records,
// and for server 0 its ready and lost-nodes files. `coordinator` is the
// address server 0 reported (unused for server 0 itself, which is told
// where it will bind).
std::vector<std::string> CommandOf(const ClusterLaunchOptions& o, const PlannedProcess& p,
                                   const HostPlace& host, const std::string& coordinator,
                                   const LaunchFiles& files);

// Every iteration-record file the workers of `plan` write into
// `records_dir` (one per job each), for the trace.
std::vector<TraceSource> RecordFilesOf(const LaunchPlan& plan, const std::string& records_dir);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_LAUNCH_PLAN_H_
