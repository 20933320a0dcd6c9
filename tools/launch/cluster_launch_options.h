// What a launcher needs to start the processes of a Strata cluster: the
// job (or jobs), the layout, the rules and the flags each kind of process
// gets. strata_launch fills it from its flags; the local launcher
// (local_cluster.h) starts every process on this machine, the Slurm task
// (slurm_task.h) only its own.
#ifndef STRATA_TOOLS_LAUNCH_CLUSTER_LAUNCH_OPTIONS_H_
#define STRATA_TOOLS_LAUNCH_CLUSTER_LAUNCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/model/job_config.h"
#include "tools/launch/lost_conv_worker.h"

namespace strata {

struct ClusterLaunchOptions {
  std::string config_path;
  // Several jobs sharing every process (each server serves them all, each
  // worker runs them all under `policy`), as `--job` configs with ids 1, 2,
  // ...; config_path is then unused. Empty: the one job of config_path.
  std::vector<std::string> job_configs;
  std::string policy = "crossover";  // exclusive, naive or crossover
  std::string weights;               // "" or one share per job, comma-separated
  JobConfig config;                  // with flag overrides applied
  // Each job's global batch (every --job's, or the one job's), which the
  // conv workers must divide.
  std::vector<int64_t> batch_sizes;
  std::string bin_dir;      // where strata_server and strata_conv_worker are
  std::string mode = "ps";  // ps or stanza
  int servers = 1;
  int conv_workers = 2;
  int fc_workers = 1;  // stanza only
  // "ipc" (Unix sockets: the fastest between processes of one host) or
  // "tcp" (127.0.0.1, the path separate hosts use).
  std::string transport = "ipc";
  // Emulated network: when `bandwidth` is set (e.g. "1gbit"), every process
  // runs on a host of its own (a network namespace) whose link is shaped to
  // this rate and `latency` (one way, e.g. "0.2ms"); the transport is then
  // tcp between the hosts' addresses. Needs root; without it the cluster
  // runs on loopback and says so.
  std::string bandwidth;
  std::string latency = "0";
  // Instead of `bandwidth`: link rates that change while the job runs,
  // "1gbit@0,100mbit@60s" (tools/netem/bandwidth_schedule.h), timed from
  // the launch; needs an emulated network.
  std::string bandwidth_schedule;
  // CPU limits of some processes that change while the job runs,
  // "conv1=25%@30s,conv1=none@90s" (tools/netem/cpu_schedule.h), timed from
  // the launch; needs a writable cgroup CPU controller (root).
  std::string cpu_schedule;
  // The CPUs some processes run on, "conv0=0,conv1=1"
  // (tools/netem/cpu_schedule.h): each emulated host's own cores.
  std::string cpu_pin;
  // Ports every serving process binds, "FIRST-LAST" (each socket takes the
  // first free one; "" = any free port). On an emulated network every
  // process binds 0.0.0.0 on these ports and advertises its host's address,
  // as on a cluster whose hosts open one range; on loopback it binds
  // 127.0.0.1 (tcp transport only).
  std::string port_range;
  // Server i runs on conv worker i's host (as BytePS and ps-lite
  // deployments colocate them), so their traffic with each other stays off
  // the link; needs servers == conv_workers.
  bool colocate_servers = false;
  std::string consistency = "bsp";
  int staleness = 2;
  int threads_per_worker = 1;
  double timeout_seconds = 60;
  std::string summary_out;  // worker 0's summary (a temp file when empty)
  std::string metrics_out;
  // Every worker writes its iteration records to DIR/<process>.jsonl
  // ("conv_worker_0.jsonl", "fc_worker_1.jsonl") when set.
  std::string records_dir;
  // A Chrome trace of every worker's iterations (tools/launch/chrome_trace.h),
  // from their records (in records_dir, or a scratch directory), when set.
  std::string trace_out;
  // Once server 0 serves: {"role":"launcher","address":COORDINATOR} as JSON
  // here (core/util/ready_file.h), for tools that talk to the running job.
  std::string ready_file;
  // Coordinated checkpoints (core/train/checkpoint_epochs.h): servers and
  // FC workers write their parts here every `checkpoint_every` iterations
  // when set; `restore` starts every process from the newest complete epoch.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  int keep_checkpoints = 3;
  bool restore = false;
  // When a process fails: stop the others and start the whole job again
  // from the newest complete epoch (from the start without one), at most
  // this many times; 0 = the job fails.
  int restart_failed = 0;
  // When a conv worker is lost (killed, or declared dead by the
  // coordinator): tools/launch/lost_conv_worker.h.
  LostConvWorkerPolicy lost_conv_worker = LostConvWorkerPolicy::kRestart;
  // The secret every process presents (handed to them in their
  // environment, never on a command line); "" = an open cluster.
  std::string job_token;
  // The secret a tool presents to shut the job down or change its knobs:
  // handed to a local cluster's servers alone, likewise ("" = none: no tool
  // may). Under Slurm each server task reads it itself (slurm_task.h).
  std::string admin_token;
  // Config overrides (--epochs, --max-steps, --batch-size, --seed) that
  // every process must apply alike.
  std::vector<std::string> override_flags;
  // For every process: what secures its connections (--curve-keys DIR) and
  // the faults it injects (--inject-faults).
  std::vector<std::string> every_process_flags;
  // For every conv and FC worker.
  std::vector<std::string> worker_flags;
  // For every conv worker: each job's controller (runtime/controller_choice.h;
  // conv worker 0 runs it).
  std::vector<std::string> conv_worker_flags;
  // A controller re-tunes each job (conv_worker_flags carry it): conv
  // worker 0 keeps its records (in the scratch directory without
  // `records_dir`), and each job's summary gets its events
  // (`controller_events`).
  bool controller = false;
  // Iterations a knob lease reaches ahead (the coordinator's --knob-lead).
  int64_t knob_lead = 8;
  // For the reporting process only.
  std::vector<std::string> extra_worker_flags;
};

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_CLUSTER_LAUNCH_OPTIONS_H_
