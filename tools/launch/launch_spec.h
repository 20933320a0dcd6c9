// LaunchSpec: a strata_launch run as a tool asks for it (a benchmark, a
// research run), rendered as strata_launch's command line by one function,
// so that no tool spells the launcher's flags itself.
//
//   LaunchSpec spec = bench_options.cluster;  // layout and network
//   spec.config = "configs/fashion_mnist.json";
//   spec.mode = "stanza";
//   spec.max_steps = 200;
//   spec.summary_out = scratch + "/summary.json";
//   process.argv = StrataLaunchCommand(BinaryDir(), spec);
#ifndef STRATA_TOOLS_LAUNCH_LAUNCH_SPEC_H_
#define STRATA_TOOLS_LAUNCH_LAUNCH_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct LaunchSpec {
  // The job: one config, or several sharing the cluster (--jobs) under
  // `policy` with `weights` ("" = the launcher's defaults).
  std::string config;
  std::vector<std::string> jobs;
  std::string policy;
  std::string weights;
  std::string mode = "single";  // single, ps or stanza
  // The layout (ps and stanza; FC workers in stanza only).
  int servers = 1;
  int conv_workers = 2;
  int fc_workers = 1;
  bool colocate_servers = false;  // server i on conv worker i's host
  // What the run overrides in the config (0: the config's own).
  int64_t max_steps = 0;
  int64_t epochs = 0;
  int64_t batch_size = 0;
  int threads = 0;
  std::string device;  // cpu, cuda, cuda:N, check ("" = the config's)
  bool tf32 = false;   // on a GPU: TensorFloat-32 products
  bool evaluate = true;
  bool progress = true;
  // Conditions (ps and stanza): each host's link ("1gbit"; "" = loopback)
  // and one-way latency, or rates that change (--bandwidth-schedule); CPU
  // limits that change (--cpu-schedule) and pinned CPUs (--cpu-pin).
  std::string bandwidth;
  std::string latency = "0";
  std::string bandwidth_schedule;
  std::string cpu_schedule;
  std::string cpu_pin;
  int64_t knob_lead = 0;  // 0: the launcher's default
  // Outputs ("" = none): the summary JSON and each process's records.
  std::string summary_out;
  std::string records_dir;
  // Flags the spec has no field for (a controller and its files), as given.
  std::vector<std::string> extra_flags;
};

// `bin_dir`/strata_launch with the flags of every field that differs from
// the launcher's defaults; the cluster's flags only in ps and stanza mode.
std::vector<std::string> StrataLaunchCommand(const std::string& bin_dir, const LaunchSpec& spec);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_LAUNCH_SPEC_H_
