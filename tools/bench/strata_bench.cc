// strata_bench: Strata's benchmark tool.
//
//   strata_bench train --config configs/fashion_mnist.json [--modes single]
//                      [--steps 300] [--repeat 3] [--threads 2] [--json out.json]
//
// Every figure is measured side by side with its peer in one run (contenders
// alternate), reported as medians and ratios, next to the machine's limit.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/model/job_config.h"
#include "core/process/process_setup.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/util/count_list.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"
#include "startup/program_startup.h"
#include "tools/bench/crossover_bench.h"
#include "tools/bench/harness/subcommands.h"
#include "tools/bench/link_bench.h"
#include "tools/bench/model_table.h"
#include "tools/bench/moe_bench.h"
#include "tools/bench/plan_report.h"
#include "tools/bench/ps_bench.h"
#include "tools/bench/reference_check.h"
#include "tools/bench/soak_bench.h"
#include "tools/bench/train_bench.h"

ABSL_FLAG(std::string, config, "", "job config JSON file (reference: several, comma-separated)");
ABSL_FLAG(std::string, mode, "", "one mode to benchmark (same as --modes with one entry)");
ABSL_FLAG(std::string, modes, "single", "comma-separated modes to benchmark");
ABSL_FLAG(int32_t, steps, 300, "training steps per run");
ABSL_FLAG(int32_t, repeat, 3, "runs per contender (alternated)");
ABSL_FLAG(int32_t, threads, 2, "CPU threads per process, for Strata and its peers alike");
ABSL_FLAG(std::string, device, "",
          "train --mode single: where Strata and the PyTorch peer compute (cuda, cuda:N; default: "
          "the config's device, the peer on the CPU)");
ABSL_FLAG(bool, tf32, false, "train --device cuda: TensorFloat-32 for Strata and the peer alike");
ABSL_FLAG(std::string, python, "/usr/bin/python3",
          "the Python with PyTorch that runs the peers (train)");
ABSL_FLAG(int32_t, batch_size, 0, "batch size (0: the config's)");
ABSL_FLAG(bool, peer, true, "also run the PyTorch peer (skipped when torch is missing)");
ABSL_FLAG(std::string, json, "", "write the report as JSON to this file");
ABSL_FLAG(std::string, workers, "",
          "ps: worker counts (default 1,2,4); moe: also spread the layer over these numbers of "
          "processes, e.g. 2,4 (expert parallelism; the best static d and r for each)");
ABSL_FLAG(std::string, transports, "tcp,ipc,shm",
          "ps: tcp (127.0.0.1), ipc (Unix sockets), shm (the shared-memory lane: headers over a "
          "Unix packet socket, data through shared memory; the rest over ipc), curve (tcp with "
          "ZeroMQ CURVE encryption)");
ABSL_FLAG(bool, curve, false,
          "ps: the price of encryption: tcp with and without CURVE, side by side (--transports "
          "tcp,curve)");
ABSL_FLAG(std::string, sizes_mib, "4,16,64,256", "ps: tensor sizes in MiB");
ABSL_FLAG(double, seconds, 1.5, "ps: measured seconds per run at a point");
ABSL_FLAG(double, minutes, 5, "soak: how long the clients run");
ABSL_FLAG(int32_t, clients, 16, "soak: clients pushing and pulling at once");
ABSL_FLAG(std::string, bandwidth, "",
          "train: emulate each host's link at this rate (e.g. 100mbit, 1gbit, 10gbit; needs "
          "root; default loopback); plan: the links to plan for, 1gbit,10gbit (default 1gbit)");
ABSL_FLAG(std::string, latency, "0",
          "train: with --bandwidth, one-way delay between hosts (0.2ms)");
ABSL_FLAG(std::string, sweep, "",
          "train: run every value of one network setting, e.g. bandwidth=100mbit,1gbit,10gbit");
ABSL_FLAG(
    std::string, knob, "",
    "train: run every cluster mode once per value of a runtime knob the job starts with, "
    "NAME=V1,V2 (wire.format=fp32,bf16, moe.pipeline_chunks=1,4, moe.parallelism=expert,data), "
    "and name the best static value per point");
ABSL_FLAG(std::string, cost_model_out, "",
          "train: with --knob, one cluster mode and --bandwidth or a bandwidth --sweep, write the "
          "knob's cost model (iteration time against link rate per value) for strata_launch "
          "--controller changepoint --cost-model");
ABSL_FLAG(std::string, csv, "", "train, ps: write the results as CSV to this file");
ABSL_FLAG(int64_t, tokens, 4096, "moe: tokens per step");
ABSL_FLAG(int64_t, dim, 512, "moe: token dimension");
ABSL_FLAG(int64_t, hidden, 1024, "moe: each expert's hidden width");
ABSL_FLAG(int32_t, experts, 8, "moe: experts");
ABSL_FLAG(int32_t, top_k, 2, "moe: experts per token");
ABSL_FLAG(double, capacity, 1.25,
          "moe: capacity factor f (> 0 padded, < 0 capped need, 0 dropless)");
ABSL_FLAG(std::string, plot, "",
          "train, crossover: with --sweep, draw images/s against it into this PNG (crossover: "
          "and the timeline next to it); plan: the predicted speed-ups against N");
ABSL_FLAG(bool, colocate_servers, false,
          "train, plan: one server per conv worker, on that worker's host (instead of "
          "--servers)");
ABSL_FLAG(std::string, models, "",
          "train: one table over these models (configs, or names of configs/: "
          "alexnet,vgg16,resnet18,resnet50), each run as --config would be");
ABSL_FLAG(std::string, jobs, "",
          "crossover: the job configs that share the cluster, a.json,b.json");
ABSL_FLAG(std::string, policies, "exclusive,naive,crossover", "crossover: the policies to run");
ABSL_FLAG(std::string, weights, "",
          "crossover: the jobs' shares of contested device time, 1,3 (default: equal)");
ABSL_FLAG(std::string, timeline, "",
          "crossover: draw when each job computed and waited under each policy into this PNG");
ABSL_FLAG(int32_t, senders, 1,
          "link: hosts that stream to one host at once (a server's link under every worker's "
          "pushes)");
ABSL_FLAG(int32_t, shared_cores, 0,
          "plan: the cluster's processes share this many cores (as an emulated cluster on one "
          "machine does; 0: every process has cores of its own)");
ABSL_FLAG(double, gflops, 0,
          "plan: compute at this rate per process (GFLOP/s) instead of timing the model's "
          "layers on this machine");

namespace {

using strata::SplitList;

// The cluster a benchmark's strata_launch runs start: the layout, and the
// network and pinned CPUs the flags ask for.
strata::LaunchSpec ClusterFromFlags() {
  const strata::ClusterLayout layout = strata::LayoutFromFlagsOver(absl::GetFlag(FLAGS_config));
  strata::LaunchSpec cluster;
  cluster.servers = layout.servers;
  cluster.conv_workers = layout.conv_workers;
  cluster.fc_workers = layout.fc_workers;
  cluster.colocate_servers = absl::GetFlag(FLAGS_colocate_servers);
  if (cluster.colocate_servers) cluster.servers = cluster.conv_workers;
  cluster.bandwidth = absl::GetFlag(FLAGS_bandwidth);
  cluster.latency = absl::GetFlag(FLAGS_latency);
  cluster.cpu_pin = strata::ConditionsFromFlags().cpu_pin;
  return cluster;
}

absl::Status Train() {
  strata::bench::TrainBenchOptions o;
  o.config = absl::GetFlag(FLAGS_config);
  o.modes = SplitList(absl::GetFlag(FLAGS_mode).empty() ? absl::GetFlag(FLAGS_modes)
                                                        : absl::GetFlag(FLAGS_mode));
  o.steps = absl::GetFlag(FLAGS_steps);
  o.repeat = absl::GetFlag(FLAGS_repeat);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.batch_size = absl::GetFlag(FLAGS_batch_size);
  o.device = absl::GetFlag(FLAGS_device);
  o.tf32 = absl::GetFlag(FLAGS_tf32);
  o.python = absl::GetFlag(FLAGS_python);
  o.with_peer = absl::GetFlag(FLAGS_peer);
  o.json_out = absl::GetFlag(FLAGS_json);
  o.cluster = ClusterFromFlags();
  o.sweep = absl::GetFlag(FLAGS_sweep);
  o.knob = absl::GetFlag(FLAGS_knob);
  o.cost_model_out = absl::GetFlag(FLAGS_cost_model_out);
  o.csv_out = absl::GetFlag(FLAGS_csv);
  o.plot_out = absl::GetFlag(FLAGS_plot);
  if (absl::GetFlag(FLAGS_models).empty()) return strata::bench::RunTrainBench(o);
  return strata::bench::RunModelTable(o, SplitList(absl::GetFlag(FLAGS_models)), o.json_out);
}

absl::Status Crossover() {
  strata::bench::CrossoverBenchOptions o;
  o.jobs = SplitList(absl::GetFlag(FLAGS_jobs));
  o.policies = SplitList(absl::GetFlag(FLAGS_policies));
  o.cluster = ClusterFromFlags();
  o.cluster.mode = absl::GetFlag(FLAGS_mode).empty() ? "ps" : absl::GetFlag(FLAGS_mode);
  o.steps = absl::GetFlag(FLAGS_steps);
  o.repeat = absl::GetFlag(FLAGS_repeat);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.batch_size = absl::GetFlag(FLAGS_batch_size);
  o.json_out = absl::GetFlag(FLAGS_json);
  o.timeline_out = absl::GetFlag(FLAGS_timeline);
  o.plot_out = absl::GetFlag(FLAGS_plot);
  o.weights = absl::GetFlag(FLAGS_weights);
  const std::string sweep = absl::GetFlag(FLAGS_sweep);
  if (!sweep.empty()) {
    if (!absl::StartsWith(sweep, "bandwidth=")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sweep ", sweep, ": crossover sweeps bandwidth=100mbit,1gbit,..."));
    }
    o.bandwidths = SplitList(sweep.substr(sweep.find('=') + 1));
  }
  return strata::bench::RunCrossoverBench(o);
}

absl::Status Plan() {
  const strata::ClusterLayout layout = strata::LayoutFromFlagsOver(absl::GetFlag(FLAGS_config));
  strata::bench::PlanOptions o;
  o.config = absl::GetFlag(FLAGS_config);
  o.shape.servers = layout.servers;
  o.shape.conv_workers = layout.conv_workers;
  o.shape.fc_workers = layout.fc_workers;
  o.shape.global_batch = absl::GetFlag(FLAGS_batch_size);
  o.shape.colocated_servers = absl::GetFlag(FLAGS_colocate_servers);
  if (!absl::GetFlag(FLAGS_bandwidth).empty())
    o.bandwidths = SplitList(absl::GetFlag(FLAGS_bandwidth));
  o.gflops = absl::GetFlag(FLAGS_gflops);
  o.shape.threads = absl::GetFlag(FLAGS_threads);
  o.shape.shared_cores = absl::GetFlag(FLAGS_shared_cores);
  o.plot = absl::GetFlag(FLAGS_plot);
  o.json_out = absl::GetFlag(FLAGS_json);
  return strata::bench::RunPlan(o);
}

absl::Status Ps() {
  strata::bench::PsBenchOptions o;
  STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> workers,
                          strata::ParseCountList("--workers", absl::GetFlag(FLAGS_workers)));
  STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> sizes,
                          strata::ParseCountList("--sizes-mib", absl::GetFlag(FLAGS_sizes_mib)));
  if (!workers.empty()) o.workers.assign(workers.begin(), workers.end());
  o.sizes_mib.assign(sizes.begin(), sizes.end());
  o.transports = SplitList(absl::GetFlag(FLAGS_transports));
  if (absl::GetFlag(FLAGS_curve)) o.transports = {"tcp", "curve"};
  o.seconds_per_point = absl::GetFlag(FLAGS_seconds);
  o.repeat = absl::GetFlag(FLAGS_repeat);
  o.json_out = absl::GetFlag(FLAGS_json);
  o.csv_out = absl::GetFlag(FLAGS_csv);
  return strata::bench::RunPsBench(o);
}

absl::Status Soak() {
  const strata::ClusterLayout layout = strata::LayoutFromFlagsOver(absl::GetFlag(FLAGS_config));
  strata::bench::SoakOptions o;
  o.minutes = absl::GetFlag(FLAGS_minutes);
  o.clients = absl::GetFlag(FLAGS_clients);
  o.servers = layout.servers > 1 ? layout.servers : 2;
  o.json_out = absl::GetFlag(FLAGS_json);
  o.plot = absl::GetFlag(FLAGS_plot);
  return strata::bench::RunSoak(o);
}

absl::Status Moe() {
  strata::bench::MoeBenchOptions o;
  o.tokens = absl::GetFlag(FLAGS_tokens);
  o.dim = absl::GetFlag(FLAGS_dim);
  o.hidden = absl::GetFlag(FLAGS_hidden);
  o.experts = absl::GetFlag(FLAGS_experts);
  o.top_k = absl::GetFlag(FLAGS_top_k);
  o.capacity = absl::GetFlag(FLAGS_capacity);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.repeat = absl::GetFlag(FLAGS_repeat);
  o.with_peer = absl::GetFlag(FLAGS_peer);
  o.json_out = absl::GetFlag(FLAGS_json);
  o.bandwidth = absl::GetFlag(FLAGS_bandwidth);
  o.latency = absl::GetFlag(FLAGS_latency);
  STRATA_ASSIGN_OR_RETURN(const std::vector<int64_t> workers,
                          strata::ParseCountList("--workers", absl::GetFlag(FLAGS_workers)));
  o.workers.assign(workers.begin(), workers.end());
  return strata::bench::RunMoeBench(o);
}

absl::Status Reference() {
  strata::bench::ReferenceCheckOptions o;
  o.configs = SplitList(absl::GetFlag(FLAGS_config));
  if (absl::GetFlag(FLAGS_batch_size) > 0) o.batch = absl::GetFlag(FLAGS_batch_size);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.json_out = absl::GetFlag(FLAGS_json);
  return strata::bench::RunReferenceCheck(o);
}

absl::Status Link() {
  return strata::bench::RunLinkBench(
      absl::GetFlag(FLAGS_bandwidth).empty() ? "1gbit" : absl::GetFlag(FLAGS_bandwidth),
      absl::GetFlag(FLAGS_latency), absl::GetFlag(FLAGS_senders));
}

const strata::bench::Subcommand kSubcommands[] = {
    {"train",
     "--config JOB.json [--modes single,ps,stanza] [--conv-workers N]\n"
     "  [--models alexnet,vgg16,resnet18,resnet50 instead of --config]\n"
     "  [--colocate-servers] [--knob wire.format=fp32,bf16 [--cost-model-out f]]\n"
     "  [--fc-workers F] [--servers S] [--bandwidth 1gbit] [--latency 0.2ms]\n"
     "  [--sweep bandwidth=100mbit,1gbit,10gbit] [--steps K] [--repeat R]\n"
     "  [--json f] [--csv f] [--plot f.png]\n"
     "  [--mode single --device cuda [--tf32]] [--python P (the peers' Python)]",
     Train},
    {"link", "--bandwidth 1gbit [--latency 0.2ms] [--senders 4]   (what an emulated link carries)",
     Link},
    {"moe",
     "[--tokens 4096] [--dim 512] [--hidden 1024] [--experts 8] [--top-k 2]\n"
     "  [--capacity 1.25] [--threads 2] [--repeat 3] [--workers 2,4]\n"
     "  [--bandwidth 1gbit]   (with --workers: each process on an emulated host)",
     Moe},
    {"ps",
     "[--workers 1,2,4] [--sizes-mib 4,16,64,256] [--transports tcp,ipc,shm]\n"
     "  [--curve]   (tcp with and without CURVE encryption) [--seconds 1.5]\n"
     "  [--repeat R] [--json f] [--csv f]",
     Ps},
    {"soak", "[--minutes 5] [--clients 16] [--servers 2] [--json f] [--plot p.png]", Soak},
    {"plan",
     "--config JOB.json --conv-workers N --fc-workers F\n"
     "  [--bandwidth 1gbit,10gbit] [--colocate-servers] [--threads T]\n"
     "  [--shared-cores C] [--plot p.png] [--json f]",
     Plan},
    {"reference",
     "--config configs/alexnet.json,configs/resnet18.json\n"
     "  [--batch-size 2] [--threads 2] [--json f]   (forward and gradients against\n"
     "  torchvision's definitions)",
     Reference},
    {"crossover",
     "--jobs A.json,B.json [--mode ps] [--conv-workers N] [--steps K]\n"
     "  [--repeat R] [--bandwidth 1gbit] [--batch-size B]\n"
     "  [--policies exclusive,naive,crossover] [--weights 1,3] [--timeline t.png]\n"
     "  [--sweep bandwidth=500mbit,1gbit,2gbit --plot p.png]",
     Crossover},
};

}  // namespace

int main(int argc, char** argv) {
  strata::StopChildrenOnInterrupt();  // Ctrl-C stops the contenders and cleans up
  const std::string usage =
      strata::bench::UsageOf("strata_bench", "Strata's benchmark tool.", kSubcommands);
  const strata::ProgramArguments args = strata::StartProgram(argc, argv, usage.c_str());
  strata::SetLogProcess("bench");
  return strata::bench::RunSubcommand("strata_bench", kSubcommands, args.positional);
}
