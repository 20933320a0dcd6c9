// strata_bench: Strata's benchmark tool.
//
//   strata_bench train --config configs/fashion_mnist.json [--modes single]
//                      [--steps 300] [--repeat 3] [--threads 2] [--json out.json]
//
// Every figure is measured side by side with its peer in one run (contenders
// alternate), reported as medians and ratios, next to the machine's limit.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/model/job_config.h"
#include "core/process/process_setup.h"
#include "core/process/subprocess.h"
#include "core/util/count_list.h"
#include "core/util/log.h"
#include "flags/cluster_flags.h"
#include "startup/program_startup.h"
#include "tools/bench/crossover_bench.h"
#include "tools/bench/link_bench.h"
#include "tools/bench/model_table.h"
#include "tools/bench/moe_bench.h"
#include "tools/bench/plan_report.h"
#include "tools/bench/ps_bench.h"
#include "tools/bench/reference_check.h"
#include "tools/bench/secbad_bench.h"
#include "tools/bench/secbad_live_bench.h"
#include "tools/bench/soak_bench.h"
#include "tools/bench/train_bench.h"

ABSL_FLAG(std::string, config, "", "job config JSON file (reference: several, comma-separated)");
ABSL_FLAG(std::string, mode, "", "one mode to benchmark (same as --modes with one entry)");
ABSL_FLAG(std::string, modes, "single", "comma-separated modes to benchmark");
ABSL_FLAG(int32_t, steps, 300, "training steps per run");
ABSL_FLAG(int32_t, repeat, 3, "runs per contender (alternated)");
ABSL_FLAG(int32_t, threads, 2, "CPU threads per process, for Strata and its peers alike");
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
ABSL_FLAG(double, seconds, 1.5, "ps: measured seconds per point");
ABSL_FLAG(double, minutes, 5, "soak: how long the clients run");
ABSL_FLAG(int32_t, seeds, 5, "secbad: seeds per contender");
ABSL_FLAG(int64_t, training_steps, 3000000,
          "secbad: environment steps each contender trains for, per seed");
ABSL_FLAG(std::string, contenders, "",
          "secbad: comma-separated contenders (default: all of the experiment's)");
ABSL_FLAG(double, learning_rate, strata::bench::SecbadBenchOptions{}.learning_rate,
          "secbad gridworld: PPO's learning rate (Adam's step)");
ABSL_FLAG(int32_t, evaluation_episodes, strata::bench::SecbadBenchOptions{}.evaluation_episodes,
          "secbad gridworld: evaluation episodes per contender and seed (the same for every "
          "contender)");
ABSL_FLAG(std::string, policy_dir, "", "secbad: keep each trained policy in this directory");
ABSL_FLAG(double, live_seconds, 125, "secbad live: each run's length from its launch");
ABSL_FLAG(std::string, records_dir, "",
          "secbad live: keep each run's records and log in DIR/<contender>_<repeat>");
ABSL_FLAG(double, warmup, 5, "secbad live: seconds from the launch left out of every figure");
ABSL_FLAG(double, decision_margin, strata::bench::kSecbadDecisionMargin,
          "secbad runtime and live: how far another value must lead the one in force or asked "
          "for before a trained policy asks for it: its leads in the policy's probabilities, "
          "added up over consecutive observations; in [0, 10], saved with the policy");
ABSL_FLAG(double, segment_mean, strata::bench::kSecbadSegmentMean,
          "secbad runtime and live (the policy it trains): iterations a context holds on average "
          "in the runtime environment, the segment prior the policies train under; episodes are "
          "4 and the posterior's window 2 mean segments");
ABSL_FLAG(double, segment_stddev, strata::bench::kSecbadSegmentStddev,
          "secbad runtime and live: the standard deviation of a context's iterations");
ABSL_FLAG(int32_t, lag, 4,
          "secbad runtime: iterations from a controller's request to its value in force");
ABSL_FLAG(std::string, observation_model, strata::bench::SecbadBenchOptions{}.observation_model,
          "secbad gridworld: how beliefs read the pushes: grid (the world's push rule over a "
          "grid of winds) or normal-gamma (a Gaussian of unknown mean and noise per axis)");
ABSL_FLAG(std::string, belief_features, strata::bench::SecbadBenchOptions{}.belief_features,
          "secbad gridworld: what a belief contender's state holds of its belief per axis: mean, "
          "mean-spread (the mean and standard deviation), or distribution (the probability of "
          "every grid wind; needs --observation-model grid)");
ABSL_FLAG(std::string, gridworld_rules, strata::bench::SecbadBenchOptions{}.gridworld_rules,
          "secbad gridworld: strata (the wind pushes a move along both axes; the goal sends the "
          "agent back to the start) or secbad-code (the rules of SeCBAD's public code: the wind "
          "pushes a move along its own axis only; the goal holds the agent, each step on it "
          "earning its reward)");
ABSL_FLAG(std::optional<double>, step_cost, std::nullopt,
          "secbad gridworld: what each step that does not land on the goal costs (the goal "
          "earns 1); unset, the rules' own: none under strata (a return counts arrivals at the "
          "goal), 0.1 under secbad-code");
ABSL_FLAG(bool, learn, true,
          "secbad gridworld: train and score every contender's policy; false: only score each "
          "contender's belief with the planner (no training)");
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
ABSL_FLAG(std::string, csv, "", "train: write the results as CSV to this file");
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

// The cluster a benchmark's strata_launch runs start: the layout, and the
// network and pinned CPUs the flags ask for.
strata::LaunchSpec ClusterFromFlags(const strata::ClusterLayout& layout) {
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

}  // namespace

int main(int argc, char** argv) {
  strata::StopChildrenOnInterrupt();  // Ctrl-C stops the contenders and cleans up
  const strata::ProgramArguments args = strata::StartProgram(
      argc, argv,
      "Strata's benchmark tool.\n"
      "  strata_bench train --config JOB.json [--modes single,ps,stanza] [--conv-workers N]\n"
      "                     [--models alexnet,vgg16,resnet18,resnet50 instead of --config]\n"
      "                     [--colocate-servers] [--knob wire.format=fp32,bf16 [--cost-model-out "
      "f]]\n"
      "                     [--fc-workers F] [--servers S] [--bandwidth 1gbit] [--latency 0.2ms]\n"
      "                     [--sweep bandwidth=100mbit,1gbit,10gbit] [--steps K] [--repeat R]\n"
      "                     [--json f] [--csv f] [--plot f.png]\n"
      "  strata_bench link --bandwidth 1gbit [--latency 0.2ms] [--senders 4]   (what an emulated\n"
      "                   link carries)\n"
      "  strata_bench moe [--tokens 4096] [--dim 512] [--hidden 1024] [--experts 8] [--top-k 2]\n"
      "                   [--capacity 1.25] [--threads 2] [--repeat 3] [--workers 2,4]\n"
      "                   [--bandwidth 1gbit]   (with --workers: each process on an emulated "
      "host)\n"
      "  strata_bench ps [--workers 1,2,4] [--sizes-mib 4,16,64,256] [--transports tcp,ipc,shm]\n"
      "                  [--curve]   (tcp with and without CURVE encryption)\n"
      "  strata_bench plan --config JOB.json --conv-workers N --fc-workers F\n"
      "                    [--bandwidth 1gbit,10gbit] [--colocate-servers] [--threads T]\n"
      "                    [--shared-cores C]\n"
      "                    [--plot p.png] [--json f]\n"
      "  strata_bench reference --config configs/alexnet.json,configs/resnet18.json\n"
      "                         [--batch-size 2] [--threads 2] [--json f]   (forward and\n"
      "                         gradients against torchvision's definitions)\n"
      "  strata_bench crossover --jobs A.json,B.json [--mode ps] [--conv-workers N] [--steps K]\n"
      "                         [--repeat R] [--bandwidth 1gbit] [--batch-size B]\n"
      "                         [--policies exclusive,naive,crossover] [--weights 1,3]\n"
      "                         [--timeline t.png]\n"
      "                         [--sweep bandwidth=500mbit,1gbit,2gbit --plot p.png]\n"
      "  strata_bench secbad gridworld [--seeds 5] [--training-steps N] [--contenders a,b]\n"
      "                     [--observation-model grid|normal-gamma]\n"
      "                     [--belief-features mean|mean-spread|distribution]\n"
      "                     [--learning-rate 0.001] [--evaluation-episodes 2000] [--learn=false]\n"
      "                     [--gridworld-rules strata|secbad-code] [--step-cost C]\n"
      "                     [--json f]\n"
      "                     [--plot posterior.png] [--policy-dir DIR]\n"
      "  strata_bench secbad runtime --cost-model cost.json [--seeds 5] [--training-steps N]\n"
      "                     [--contenders a,b] [--lag 4] [--decision-margin M]\n"
      "                     [--segment-mean 300] [--segment-stddev 100] [--json f]\n"
      "                     [--policy-dir DIR]\n"
      "  strata_bench secbad live --config JOB.json [--mode ps] [--conv-workers N]\n"
      "                     --cost-model cost.json [--policy-file p.bin | --training-steps N\n"
      "                     [--decision-margin M] [--segment-mean 300] [--segment-stddev 100]]\n"
      "                     --cpu-schedule S [--bandwidth-schedule S] [--cpu-pin conv0=0,...]\n"
      "                     [--live-seconds 125] [--warmup 5] [--repeat 3] [--knob-lead 2]\n"
      "                     [--contenders static,changepoint,secbad] [--json f] [--plot p.png]\n"
      "                     [--records-dir DIR]");
  strata::SetLogProcess("bench");
  if (args.positional.size() < 2) {
    std::fprintf(stderr, "strata_bench: error: name a benchmark (train)\n");
    return 2;
  }
  const std::string command = args.positional[1];
  absl::Status status;
  // train, plan: --servers, --conv-workers and --fc-workers over the
  // config's cluster block (a config that does not load is reported by the
  // benchmark itself).
  strata::ClusterConfig cluster;
  if (!absl::GetFlag(FLAGS_config).empty() && command != "reference") {
    absl::StatusOr<strata::JobConfig> config = strata::LoadJobConfig(absl::GetFlag(FLAGS_config));
    if (config.ok()) cluster = config->cluster;
  }
  const strata::ClusterLayout layout = strata::LayoutFromFlags(cluster);
  if (command == "train") {
    strata::bench::TrainBenchOptions o;
    o.config = absl::GetFlag(FLAGS_config);
    const std::string modes =
        absl::GetFlag(FLAGS_mode).empty() ? absl::GetFlag(FLAGS_modes) : absl::GetFlag(FLAGS_mode);
    o.modes = absl::StrSplit(modes, ',', absl::SkipEmpty());
    o.steps = absl::GetFlag(FLAGS_steps);
    o.repeat = absl::GetFlag(FLAGS_repeat);
    o.threads = absl::GetFlag(FLAGS_threads);
    o.batch_size = absl::GetFlag(FLAGS_batch_size);
    o.with_peer = absl::GetFlag(FLAGS_peer);
    o.json_out = absl::GetFlag(FLAGS_json);
    o.cluster = ClusterFromFlags(layout);
    o.sweep = absl::GetFlag(FLAGS_sweep);
    o.knob = absl::GetFlag(FLAGS_knob);
    o.cost_model_out = absl::GetFlag(FLAGS_cost_model_out);
    o.csv_out = absl::GetFlag(FLAGS_csv);
    o.plot_out = absl::GetFlag(FLAGS_plot);
    if (absl::GetFlag(FLAGS_models).empty()) {
      status = strata::bench::RunTrainBench(o);
    } else {
      status = strata::bench::RunModelTable(
          o, absl::StrSplit(absl::GetFlag(FLAGS_models), ',', absl::SkipEmpty()), o.json_out);
    }
  } else if (command == "crossover") {
    strata::bench::CrossoverBenchOptions o;
    o.jobs = absl::StrSplit(absl::GetFlag(FLAGS_jobs), ',', absl::SkipEmpty());
    o.policies = absl::StrSplit(absl::GetFlag(FLAGS_policies), ',', absl::SkipEmpty());
    o.cluster = ClusterFromFlags(layout);
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
        status = absl::InvalidArgumentError(
            absl::StrCat("--sweep ", sweep, ": crossover sweeps bandwidth=100mbit,1gbit,..."));
      }
      o.bandwidths = absl::StrSplit(sweep.substr(sweep.find('=') + 1), ',', absl::SkipEmpty());
    }
    if (status.ok()) status = strata::bench::RunCrossoverBench(o);
  } else if (command == "plan") {
    strata::bench::PlanOptions o;
    o.config = absl::GetFlag(FLAGS_config);
    o.shape.servers = layout.servers;
    o.shape.conv_workers = layout.conv_workers;
    o.shape.fc_workers = layout.fc_workers;
    o.shape.global_batch = absl::GetFlag(FLAGS_batch_size);
    o.shape.colocated_servers = absl::GetFlag(FLAGS_colocate_servers);
    if (!absl::GetFlag(FLAGS_bandwidth).empty()) {
      o.bandwidths = absl::StrSplit(absl::GetFlag(FLAGS_bandwidth), ',', absl::SkipEmpty());
    }
    o.gflops = absl::GetFlag(FLAGS_gflops);
    o.shape.threads = absl::GetFlag(FLAGS_threads);
    o.shape.shared_cores = absl::GetFlag(FLAGS_shared_cores);
    o.plot = absl::GetFlag(FLAGS_plot);
    o.json_out = absl::GetFlag(FLAGS_json);
    status = strata::bench::RunPlan(o);
  } else if (command == "ps") {
    strata::bench::PsBenchOptions o;
    absl::StatusOr<std::vector<int64_t>> workers =
        strata::ParseCountList("--workers", absl::GetFlag(FLAGS_workers));
    absl::StatusOr<std::vector<int64_t>> sizes =
        strata::ParseCountList("--sizes-mib", absl::GetFlag(FLAGS_sizes_mib));
    status = !workers.ok() ? workers.status() : sizes.status();
    if (status.ok()) {
      if (!workers->empty()) o.workers.assign(workers->begin(), workers->end());
      o.sizes_mib.assign(sizes->begin(), sizes->end());
      o.transports = absl::StrSplit(absl::GetFlag(FLAGS_transports), ',', absl::SkipEmpty());
      if (absl::GetFlag(FLAGS_curve)) o.transports = {"tcp", "curve"};
      o.seconds_per_point = absl::GetFlag(FLAGS_seconds);
      o.json_out = absl::GetFlag(FLAGS_json);
      status = strata::bench::RunPsBench(o);
    }
  } else if (command == "soak") {
    strata::bench::SoakOptions o;
    o.minutes = absl::GetFlag(FLAGS_minutes);
    o.clients = absl::GetFlag(FLAGS_clients);
    o.servers = layout.servers > 1 ? layout.servers : 2;
    o.json_out = absl::GetFlag(FLAGS_json);
    o.plot = absl::GetFlag(FLAGS_plot);
    status = strata::bench::RunSoak(o);
  } else if (command == "moe") {
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
    absl::StatusOr<std::vector<int64_t>> workers =
        strata::ParseCountList("--workers", absl::GetFlag(FLAGS_workers));
    status = workers.status();
    if (status.ok()) {
      o.workers.assign(workers->begin(), workers->end());
      status = strata::bench::RunMoeBench(o);
    }
  } else if (command == "reference") {
    strata::bench::ReferenceCheckOptions o;
    o.configs = absl::StrSplit(absl::GetFlag(FLAGS_config), ',', absl::SkipEmpty());
    if (absl::GetFlag(FLAGS_batch_size) > 0) o.batch = absl::GetFlag(FLAGS_batch_size);
    o.threads = absl::GetFlag(FLAGS_threads);
    o.json_out = absl::GetFlag(FLAGS_json);
    status = strata::bench::RunReferenceCheck(o);
  } else if (command == "secbad" && args.positional.size() > 2 && args.positional[2] == "live") {
    strata::bench::SecbadLiveOptions o;
    o.config = absl::GetFlag(FLAGS_config);
    o.cluster = ClusterFromFlags(layout);
    o.cluster.mode = absl::GetFlag(FLAGS_mode).empty() ? "ps" : absl::GetFlag(FLAGS_mode);
    o.threads = absl::GetFlag(FLAGS_threads);
    o.cost_model = strata::ControllerFromFlags().cost_model;
    o.policy_file = strata::ControllerFromFlags().policy_file;
    o.training_steps = absl::GetFlag(FLAGS_training_steps);
    o.decision_margin = absl::GetFlag(FLAGS_decision_margin);
    o.segment_mean = absl::GetFlag(FLAGS_segment_mean);
    o.segment_stddev = absl::GetFlag(FLAGS_segment_stddev);
    const strata::ConditionFlags conditions = strata::ConditionsFromFlags();
    o.cluster.cpu_schedule = conditions.cpu_schedule;
    o.cluster.bandwidth_schedule = conditions.bandwidth_schedule;
    o.seconds = absl::GetFlag(FLAGS_live_seconds);
    o.warmup = absl::GetFlag(FLAGS_warmup);
    o.repeat = absl::GetFlag(FLAGS_repeat);
    absl::StatusOr<int64_t> lead = strata::KnobLeadFromFlags();
    if (!lead.ok()) {
      status = lead.status();
    } else {
      o.cluster.knob_lead = *lead;
      if (!absl::GetFlag(FLAGS_contenders).empty()) {
        o.contenders = absl::StrSplit(absl::GetFlag(FLAGS_contenders), ',', absl::SkipEmpty());
      }
      o.json_out = absl::GetFlag(FLAGS_json);
      o.plot = absl::GetFlag(FLAGS_plot);
      o.records_dir = absl::GetFlag(FLAGS_records_dir);
      status = strata::bench::RunSecbadLive(o);
    }
  } else if (command == "secbad") {
    strata::bench::SecbadBenchOptions o;
    if (args.positional.size() > 2) o.experiment = args.positional[2];
    o.seeds = absl::GetFlag(FLAGS_seeds);
    o.training_steps = absl::GetFlag(FLAGS_training_steps);
    o.contenders = absl::StrSplit(absl::GetFlag(FLAGS_contenders), ',', absl::SkipEmpty());
    o.json_out = absl::GetFlag(FLAGS_json);
    o.plot = absl::GetFlag(FLAGS_plot);
    o.policy_dir = absl::GetFlag(FLAGS_policy_dir);
    o.observation_model = absl::GetFlag(FLAGS_observation_model);
    o.belief_features = absl::GetFlag(FLAGS_belief_features);
    o.gridworld_rules = absl::GetFlag(FLAGS_gridworld_rules);
    o.step_cost = absl::GetFlag(FLAGS_step_cost);
    o.evaluation_episodes = absl::GetFlag(FLAGS_evaluation_episodes);
    o.learn = absl::GetFlag(FLAGS_learn);
    o.learning_rate = absl::GetFlag(FLAGS_learning_rate);
    o.cost_model = strata::ControllerFromFlags().cost_model;
    o.lag = absl::GetFlag(FLAGS_lag);
    o.decision_margin = absl::GetFlag(FLAGS_decision_margin);
    o.segment_mean = absl::GetFlag(FLAGS_segment_mean);
    o.segment_stddev = absl::GetFlag(FLAGS_segment_stddev);
    status = strata::bench::RunSecbadBench(o);
  } else if (command == "link") {
    status = strata::bench::RunLinkBench(
        absl::GetFlag(FLAGS_bandwidth).empty() ? "1gbit" : absl::GetFlag(FLAGS_bandwidth),
        absl::GetFlag(FLAGS_latency), absl::GetFlag(FLAGS_senders));
  } else {
    std::fprintf(
        stderr,
        "strata_bench: error: unknown benchmark \"%s\" (known: train, ps, soak, plan, link, "
        "moe, crossover, reference, secbad)\n",
        command.c_str());
    return 2;
  }
  return strata::ExitCodeFor("strata_bench", status);
}
