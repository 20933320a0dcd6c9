#include "tools/bench/train_bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/control/iteration_record.h"
#include "core/control/knobs.h"
#include "core/model/batch_shares.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/train/metrics_writer.h"
#include "core/util/json_file.h"
#include "scheduler/secbad/knob_cost_model.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/worker_speed_context.h"
#include "tools/bench/bench_report.h"
#include "tools/bench/knob_variants.h"
#include "tools/bench/machine_limits.h"
#include "tools/bench/progress_bar.h"
#include "tools/bench/throughput_plot.h"
#include "tools/bench/train_check.h"
#include "tools/bench/train_report.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

constexpr absl::Duration kRunTimeout = absl::Minutes(30);

// The conditions one point of the report runs in.
struct NetworkSetting {
  std::string bandwidth;  // "" = loopback
  std::string latency = "0";
  // CPU limits of Strata's processes from the start, as --cpu-schedule
  // takes them ("conv1=25%@0"; "" = none).
  std::string cpu_schedule;
};

enum class Kind { kStrata, kTorch, kTorchDdp };

struct Contender {
  std::string label;
  Kind kind = Kind::kStrata;
  std::string mode;        // Strata's mode
  std::string config;      // Strata's job config ("" = the bench's)
  std::string knob_value;  // the value the job starts the --knob with ("" = none)
};

struct RunResult {
  double images_per_sec = 0;
  double bytes_per_iteration = 0;
  std::map<std::string, double> seconds_per_iteration;
  // When the runner was asked for records (a cost model is fitted): every
  // steady iteration's compute and rows of each conv worker (worker speed),
  // or conv worker 0's communication seconds (link rate).
  std::vector<secbad::SpeedSample> speed_samples;
  std::vector<double> communication_seconds;
};

// Iterations a run's start-up takes (connections, first pulls, kernels
// made for the batch size): not what a cost model describes.
constexpr int64_t kStartupIterations = 2;

// The conv workers' iterations of a run, from its records: each conv
// worker's compute and rows, conv worker 0's wall seconds.
absl::StatusOr<std::vector<secbad::SpeedSample>> SpeedSamplesOf(const std::string& records_dir,
                                                                int conv_workers) {
  std::map<int64_t, secbad::SpeedSample> by_iteration;
  for (int r = 0; r < conv_workers; ++r) {
    STRATA_ASSIGN_OR_RETURN(
        const std::vector<nlohmann::json> records,
        ReadIterationRecords(absl::StrCat(records_dir, "/conv_worker_", r, ".jsonl")));
    for (const nlohmann::json& record : records) {
      const int64_t i = record.value("iteration", int64_t{-1});
      if (i < kStartupIterations || !record.value("completed", false)) continue;
      secbad::SpeedSample& s = by_iteration[i];
      s.compute_seconds.resize(conv_workers, 0.0);
      s.rows.resize(conv_workers, 0);
      s.compute_seconds[r] = record.value("compute", 0.0);
      s.rows[r] = record.value("rows", int64_t{0});
      if (r == 0) s.wall_seconds = record.value("wall", 0.0);
    }
  }
  std::vector<secbad::SpeedSample> samples;
  for (auto& [i, s] : by_iteration) {
    if (std::all_of(s.rows.begin(), s.rows.end(), [](int64_t n) { return n > 0; })) {
      samples.push_back(std::move(s));
    }
  }
  return samples;
}

// Conv worker 0's communication seconds in each steady iteration of a run,
// from its records: what a link-rate controller reads the rate from.
absl::StatusOr<std::vector<double>> CommunicationSecondsOf(const std::string& records_dir) {
  STRATA_ASSIGN_OR_RETURN(const std::vector<nlohmann::json> records,
                          ReadIterationRecords(records_dir + "/conv_worker_0.jsonl"));
  std::vector<double> seconds;
  for (const nlohmann::json& record : records) {
    if (record.value("iteration", int64_t{-1}) < kStartupIterations ||
        !record.value("completed", false)) {
      continue;
    }
    seconds.push_back(record.value("communication", 0.0));
  }
  return seconds;
}

// A free TCP port on 127.0.0.1 (for the DDP rendezvous on loopback).
absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  if (!ok) return absl::InternalError("no free loopback port");
  return ntohs(a.sin_port);
}

// What a Strata run's records are read for: the cost model being fitted.
enum class RecordsWanted { kNone, kWorkerSpeed, kLinkRate };

// Runs contenders; owns the scratch directory of their logs and results.
class Runner {
 public:
  // `records_wanted`: keep every Strata run's conv worker iterations
  // (RunResult::speed_samples, or communication_seconds).
  Runner(const TrainBenchOptions& o, int64_t batch, std::string scratch,
         RecordsWanted records_wanted)
      : o_(o), batch_(batch), scratch_(std::move(scratch)), records_wanted_(records_wanted) {}

  absl::StatusOr<RunResult> Run(const Contender& c, const NetworkSetting& net) {
    ++runs_;
    switch (c.kind) {
      case Kind::kStrata:
        return RunStrata(c, net);
      case Kind::kTorch:
        return RunTorch();
      case Kind::kTorchDdp:
        return RunTorchDdp(net);
    }
    return absl::InternalError("unknown contender");
  }

 private:
  std::string Path(const std::string& what) const {
    return absl::StrCat(scratch_, "/run", runs_, "_", what);
  }

  absl::StatusOr<RunResult> RunStrata(const Contender& c, const NetworkSetting& net) {
    ProcessSpec spec;
    const std::string result = Path("summary.json");
    LaunchSpec launch = o_.cluster;
    launch.config = c.config.empty() ? o_.config : c.config;
    launch.mode = c.mode;
    launch.max_steps = o_.steps;
    launch.threads = o_.threads;
    launch.batch_size = batch_;
    launch.evaluate = false;
    launch.progress = false;
    launch.summary_out = result;
    launch.bandwidth = net.bandwidth;
    launch.latency = net.latency;
    launch.cpu_schedule = net.cpu_schedule;
    if (records_wanted_ != RecordsWanted::kNone && c.mode != "single") {
      launch.records_dir = Path("records");
    }
    spec.argv = StrataLaunchCommand(BinaryDir(), launch);
    spec.unset_env = UnsetForBenchmarks();
    spec.set_env = {{"OMP_NUM_THREADS", std::to_string(o_.threads)}};
    spec.output_path = Path("strata.log");
    STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, kRunTimeout));
    if (code != 0) {
      return absl::InternalError(absl::StrCat(c.label, " exited with status ", code,
                                              "; the end of its output:\n",
                                              FileTail(spec.output_path, 2000)));
    }
    if (!net.bandwidth.empty() &&
        absl::StrContains(FileTail(spec.output_path, 1 << 20), kNoNetworkNotice)) {
      WarnLoopbackOnce("see the launcher's log");
    }
    STRATA_ASSIGN_OR_RETURN(
        nlohmann::json j, ReadContenderResult(result, "images_per_sec", c.label, spec.output_path));
    RunResult r;
    r.images_per_sec = j["images_per_sec"].get<double>();
    r.bytes_per_iteration = j.value("bytes_per_iteration", 0.0);
    if (j.contains("seconds_per_iteration")) {
      r.seconds_per_iteration = j["seconds_per_iteration"].get<std::map<std::string, double>>();
    }
    if (records_wanted_ == RecordsWanted::kWorkerSpeed && c.mode != "single") {
      STRATA_ASSIGN_OR_RETURN(r.speed_samples,
                              SpeedSamplesOf(Path("records"), o_.cluster.conv_workers));
    } else if (records_wanted_ == RecordsWanted::kLinkRate && c.mode != "single") {
      STRATA_ASSIGN_OR_RETURN(r.communication_seconds, CommunicationSecondsOf(Path("records")));
    }
    return r;
  }

  absl::StatusOr<RunResult> RunTorch() {
    ProcessSpec spec;
    const std::string result = Path("pytorch.json");
    spec.argv = {o_.python,      SourceDir() + "/tools/bench/peers/torch_train.py",
                 "--config",     o_.config,
                 "--steps",      std::to_string(o_.steps),
                 "--threads",    std::to_string(o_.threads),
                 "--batch-size", std::to_string(batch_),
                 "--json",       result};
    spec.unset_env = UnsetForBenchmarks();
    spec.set_env = PeerEnvironment(o_.threads);
    spec.output_path = Path("pytorch.log");
    STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, kRunTimeout));
    if (code != 0) {
      return absl::InternalError(absl::StrCat("the PyTorch peer exited with status ", code, ":\n",
                                              FileTail(spec.output_path, 2000)));
    }
    STRATA_ASSIGN_OR_RETURN(nlohmann::json j, ReadContenderResult(result, "images_per_sec",
                                                                  "pytorch", spec.output_path));
    RunResult peer;
    peer.images_per_sec = j["images_per_sec"].get<double>();
    return peer;
  }

  // DistributedDataParallel with one rank per conv worker, each rank on a
  // host of its own when the network is emulated.
  absl::StatusOr<RunResult> RunTorchDdp(const NetworkSetting& net) {
    const int world = o_.cluster.conv_workers;
    const int threads = std::max(1, o_.threads / world);
    std::unique_ptr<EmulatedNetwork> network;
    if (!net.bandwidth.empty()) {
      std::string why;
      STRATA_ASSIGN_OR_RETURN(network, EmulateOrFallBack(net.bandwidth, net.latency, world, &why));
      if (network == nullptr) WarnLoopbackOnce(why);
    }
    std::string master;
    if (network != nullptr) {
      master = network->host_address(0) + ":29500";
    } else {
      STRATA_ASSIGN_OR_RETURN(int port, FreeLoopbackPort());
      master = absl::StrCat("127.0.0.1:", port);
    }
    const std::string result = Path("ddp.json");
    std::vector<ProcessSpec> ranks(world);
    for (int r = 0; r < world; ++r) {
      ProcessSpec& spec = ranks[r];
      spec.argv = {o_.python,      SourceDir() + "/tools/bench/peers/torch_ddp.py",
                   "--config",     o_.config,
                   "--rank",       std::to_string(r),
                   "--world-size", std::to_string(world),
                   "--master",     master,
                   "--batch-size", std::to_string(batch_),
                   "--steps",      std::to_string(o_.steps),
                   "--threads",    std::to_string(threads),
                   "--json",       result};
      spec.unset_env = UnsetForBenchmarks();
      spec.set_env = PeerEnvironment(threads);
      spec.set_env.push_back({"GLOO_SOCKET_IFNAME", network != nullptr ? "eth0" : "lo"});
      spec.output_path = Path(absl::StrCat("ddp_rank", r, ".log"));
      if (network != nullptr) spec.network_namespace = network->namespace_path(r);
    }
    STRATA_ASSIGN_OR_RETURN(std::vector<int> codes, RunProcesses(ranks, kRunTimeout));
    for (int r = 0; r < world; ++r) {
      if (codes[r] != 0 && codes[r] != 128 + 9) {
        return absl::InternalError(absl::StrCat("PyTorch DDP rank ", r, " exited with status ",
                                                codes[r], ":\n",
                                                FileTail(ranks[r].output_path, 2000)));
      }
    }
    STRATA_ASSIGN_OR_RETURN(
        nlohmann::json j,
        ReadContenderResult(result, "images_per_sec", "pytorch ddp", ranks[0].output_path));
    RunResult peer;
    peer.images_per_sec = j["images_per_sec"].get<double>();
    return peer;
  }

  // Says once that the network could not be emulated here, and why.
  void WarnLoopbackOnce(const std::string& why) {
    if (warned_) return;
    warned_ = true;
    std::printf("warning: the network could not be emulated here (%s); runs use loopback\n",
                why.c_str());
  }

  const TrainBenchOptions& o_;
  const int64_t batch_;
  const std::string scratch_;
  const RecordsWanted records_wanted_;
  int runs_ = 0;
  bool warned_ = false;
};

struct Sweep {
  std::string parameter;  // "" = no sweep
  std::vector<std::string> values;
};

// A point of a cpu sweep as a --cpu-schedule from the start: "none" is no
// limit, "conv1=25%;conv0=50%" limits each process named.
std::string CpuScheduleOf(const std::string& point) {
  if (point == "none") return "";
  std::vector<std::string> entries;
  for (const std::string& limit : std::vector<std::string>(absl::StrSplit(point, ';'))) {
    entries.push_back(limit + "@0");
  }
  return absl::StrJoin(entries, ",");
}

absl::StatusOr<Sweep> ParseSweep(const TrainBenchOptions& o) {
  Sweep s;
  if (o.sweep.empty()) return s;
  std::vector<std::string> kv = absl::StrSplit(o.sweep, absl::MaxSplits('=', 1));
  if (kv.size() != 2 || (kv[0] != "bandwidth" && kv[0] != "latency" && kv[0] != "cpu")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sweep ", o.sweep,
        ": use bandwidth=100mbit,1gbit,..., latency=0,0.5ms,... or cpu=none,conv1=25%,..."));
  }
  s.parameter = kv[0];
  s.values = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
  if (s.values.empty()) return absl::InvalidArgumentError("--sweep lists no values");
  for (const std::string& v : s.values) {
    if (s.parameter == "bandwidth") {
      STRATA_RETURN_IF_ERROR(ParseBandwidth(v).status());
    } else if (s.parameter == "latency") {
      STRATA_RETURN_IF_ERROR(ParseLatency(v).status());
    } else if (v != "none") {
      STRATA_RETURN_IF_ERROR(ParseCpuSchedule(CpuScheduleOf(v)).status());
    }
  }
  if (s.parameter == "cpu" && o.with_peer) {
    return absl::InvalidArgumentError(
        "--sweep cpu=... limits Strata's processes only, not the PyTorch peers': add "
        "--peer=false");
  }
  if (s.parameter == "latency" && o.cluster.bandwidth.empty()) {
    return absl::InvalidArgumentError("--sweep latency=... needs --bandwidth (the link it delays)");
  }
  return s;
}

// Ratios that matter: every Strata mode against every peer, and stanza
// against ps.
void PrintRatios(const SweepPoint& p, nlohmann::json& point_json) {
  auto find = [&p](const std::string& label) -> const ContenderResult* {
    for (const auto& c : p.contenders) {
      if (c.label == label) return &c;
    }
    return nullptr;
  };
  std::vector<std::pair<std::string, std::string>> pairs = {{"strata stanza", "strata ps"}};
  for (const auto& a : p.contenders) {
    if (!absl::StartsWith(a.label, "strata")) continue;
    for (const auto& b : p.contenders) {
      if (absl::StartsWith(b.label, "pytorch")) pairs.push_back({a.label, b.label});
    }
  }
  for (const auto& [a, b] : pairs) {
    const ContenderResult* x = find(a);
    const ContenderResult* y = find(b);
    if (x == nullptr || y == nullptr || y->median() <= 0) continue;
    const double ratio = x->median() / y->median();
    std::printf("ratio %s / %s: %.2fx\n", a.c_str(), b.c_str(), ratio);
    point_json["ratios"][a + " / " + b] = ratio;
  }
}

// Per cluster mode, the knob value whose run was fastest (by median) at
// `point`, printed with its lead over the slowest value; returned as
// {mode: {"value", "images_per_sec", "over_slowest"}}.
nlohmann::json PrintBestStatic(const SweepPoint& point, const std::vector<Contender>& contenders,
                               const std::string& knob, const std::vector<std::string>& modes) {
  nlohmann::json best = nlohmann::json::object();
  for (const std::string& mode : modes) {
    const Contender* fastest = nullptr;
    double fastest_rate = 0, slowest_rate = 0;
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (contenders[i].mode != mode || contenders[i].knob_value.empty()) continue;
      const double rate = point.contenders[i].median();
      if (fastest == nullptr || rate > fastest_rate) {
        fastest = &contenders[i];
        fastest_rate = rate;
      }
      if (slowest_rate == 0 || rate < slowest_rate) slowest_rate = rate;
    }
    if (fastest == nullptr || slowest_rate <= 0) continue;
    std::printf("best static %s (%s): %s, %.0f images/s, %.2fx the slowest value\n", knob.c_str(),
                mode.c_str(), fastest->knob_value.c_str(), fastest_rate,
                fastest_rate / slowest_rate);
    best[mode] = {{"value", fastest->knob_value},
                  {"images_per_sec", fastest_rate},
                  {"over_slowest", fastest_rate / slowest_rate}};
  }
  return best;
}

// The knob's cost model for `mode`, fitted to every knob value's mean
// iteration at every point (each at its link rate), with the trace's
// reading noise and outliers fitted to every run's iterations
// (`link_runs`), printed and written to `path`.
absl::Status WriteCostModel(const TrainReport& report, const std::vector<double>& rates_gbit,
                            const std::vector<Contender>& contenders,
                            const std::vector<secbad::LinkRateRun>& link_runs,
                            const std::string& knob, const std::string& mode,
                            const std::string& path) {
  std::vector<secbad::CostSample> samples;
  for (size_t p = 0; p < report.points.size(); ++p) {
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (contenders[i].mode != mode || contenders[i].knob_value.empty()) continue;
      const std::map<std::string, double>& parts =
          report.points[p].contenders[i].seconds_per_iteration;
      auto part = [&parts](const char* name) {
        const auto it = parts.find(name);
        return it == parts.end() ? 0.0 : it->second;
      };
      samples.push_back({contenders[i].knob_value, rates_gbit[p], part("compute") + part("waiting"),
                         part("communication")});
    }
  }
  STRATA_ASSIGN_OR_RETURN(const secbad::KnobCostModel model,
                          secbad::KnobCostModel::Fit(knob, mode, samples));
  std::printf("cost model of %s (%s), iteration = local + fixed + transfer at 1 Gbit/s / rate:\n",
              knob.c_str(), mode.c_str());
  for (const auto& [value, cost] : model.values()) {
    std::printf("  %-10s local %.4fs  fixed %.4fs  transfer %.4fs\n", value.c_str(),
                cost.local_seconds, cost.fixed_seconds, cost.transfer_seconds_at_1gbit);
  }
  std::vector<secbad::LinkRateRunReadings> read;
  STRATA_ASSIGN_OR_RETURN(const secbad::LinkRateTrace trace,
                          secbad::FitLinkRateTrace(model, link_runs, &read));
  size_t readings = 0;
  for (const secbad::LinkRateRunReadings& run : read) {
    std::printf("  run of %-10s read %.3g Gbit/s (median), noise %.3f of ln(rate), %zu readings\n",
                run.value.c_str(), run.median_rate_gbit, run.noise, run.readings);
    readings += run.readings;
  }
  std::string at_1gbit;
  for (const auto& [value, noise] : trace.value_noise) {
    at_1gbit += absl::StrFormat("%s %.3f, ", value, noise);
  }
  std::printf(
      "  readings of ln(rate): noise at 1 Gbit/s %sany other value %.3f; x (rate in Gbit/s)^%.2f; "
      "outliers %.1f%% (over %.0fx the noise from their run's median; %zu iterations of %zu "
      "runs)\n",
      at_1gbit.c_str(), trace.noise, trace.noise_slope, 100 * trace.outliers,
      secbad::kOutlierDeviations, readings, link_runs.size());
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, secbad::LinkRateContext(model, trace).ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

// batch.shares' cost model for `mode` (scheduler/secbad/worker_speed_context.h),
// fitted to every run's conv worker iterations, printed and written to `path`.
absl::Status WriteWorkerSpeedModel(
    const std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>>& runs,
    const std::string& mode, int64_t batch, int conv_workers, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::shared_ptr<const secbad::WorkerSpeedContext> model,
                          secbad::WorkerSpeedContext::Fit(mode, batch, conv_workers, runs));
  std::printf(
      "cost model of batch.shares (%s), iteration = the slowest conv worker's rows x its "
      "seconds per row + overhead: usual %.3g ms per row, reading noise %.2f (ln); outliers "
      "%.1f%% of iterations (a conv worker's reading over %.0fx the noise from its run's mean)\n",
      mode.c_str(), 1000 * model->seconds_per_row(), model->noise(), 100 * model->trace().outliers,
      secbad::kOutlierDeviations);
  for (const std::string& value : model->values()) {
    std::printf("  %-10s overhead %.4fs\n", value.c_str(), model->overhead_seconds(value));
  }
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, model->ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::Status RunTrainBench(const TrainBenchOptions& o) {
  if (o.config.empty()) return absl::InvalidArgumentError("train: --config is required");
  if (o.steps <= 0 || o.repeat <= 0 || o.threads <= 0) {
    return absl::InvalidArgumentError("train: --steps, --repeat and --threads must be > 0");
  }
  bool cluster_modes = false;
  for (const std::string& mode : o.modes) {
    if (mode != "single" && mode != "ps" && mode != "stanza") {
      return absl::InvalidArgumentError(
          absl::StrCat("train: unknown mode \"", mode, "\" (use single, ps, stanza)"));
    }
    cluster_modes = cluster_modes || mode != "single";
  }
  if (o.modes.empty()) return absl::InvalidArgumentError("train: --modes lists no mode");
  if (!o.cluster.bandwidth.empty())
    STRATA_RETURN_IF_ERROR(ParseBandwidth(o.cluster.bandwidth).status());
  STRATA_RETURN_IF_ERROR(ParseLatency(o.cluster.latency).status());
  STRATA_ASSIGN_OR_RETURN(Sweep sweep, ParseSweep(o));
  if (!o.plot_out.empty() && sweep.parameter.empty()) {
    return absl::InvalidArgumentError("--plot needs a --sweep (throughput against its values)");
  }
  const int cluster_mode_count = static_cast<int>(std::count_if(
      o.modes.begin(), o.modes.end(), [](const std::string& m) { return m != "single"; }));
  const bool worker_speed_model =
      !o.cost_model_out.empty() && absl::StartsWith(o.knob, std::string(kBatchSharesKnob) + "=");
  if (!o.cost_model_out.empty() && (o.knob.empty() || cluster_mode_count != 1)) {
    return absl::InvalidArgumentError(
        "--cost-model-out needs --knob and one cluster mode in --modes");
  }
  if (!o.cost_model_out.empty() && !worker_speed_model && sweep.parameter != "bandwidth" &&
      o.cluster.bandwidth.empty()) {
    return absl::InvalidArgumentError(
        "--cost-model-out for this knob needs --bandwidth or --sweep bandwidth=...: the model "
        "relates the knob's values to link rates");
  }
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(o.config));
  const int64_t batch = o.batch_size > 0 ? o.batch_size : config.training.batch_size;
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const double train_flops = static_cast<double>(model->TrainingFlopsPerSample());

  char scratch_template[] = "/tmp/strata_bench_XXXXXX";
  const std::string scratch = ::mkdtemp(scratch_template);

  std::printf("strata_bench train: %s, global batch %lld, %d threads, %d steps x %d repeats\n",
              o.config.c_str(), static_cast<long long>(batch), o.threads, o.steps, o.repeat);
  if (cluster_modes) {
    std::printf("cluster: %d server(s)%s, %d conv workers, %d FC worker(s); network: %s\n",
                o.cluster.servers,
                o.cluster.colocate_servers ? " (each on a conv worker's host)" : "",
                o.cluster.conv_workers, o.cluster.fc_workers,
                !sweep.parameter.empty() && sweep.parameter == "bandwidth"
                    ? "swept"
                    : (o.cluster.bandwidth.empty()
                           ? "loopback"
                           : absl::StrCat(o.cluster.bandwidth, " per host, ",
                                          o.cluster.latency == "0" ? "no added latency"
                                                                   : o.cluster.latency + " one way")
                                 .c_str()));
  }
  const double gflops = MeasureSgemmGflops(2048, o.threads);
  std::printf("machine: SGEMM 2048^3 with %d threads: %.1f GFLOP/s\n", o.threads, gflops);
  std::fflush(stdout);

  std::vector<Contender> contenders;
  std::optional<KnobValues> knob;
  if (!o.knob.empty()) {
    absl::StatusOr<KnobValues> parsed = ParseKnobValues(o.knob);
    absl::StatusOr<nlohmann::json> raw =
        parsed.ok() ? ReadJsonFile(o.config) : absl::StatusOr<nlohmann::json>(parsed.status());
    if (!raw.ok()) {
      std::filesystem::remove_all(scratch);
      return raw.status();
    }
    knob = *parsed;
    for (const std::string& value : knob->values) {
      absl::StatusOr<nlohmann::json> variant = ConfigStartingWith(*raw, knob->name, value);
      const std::string path = absl::StrCat(scratch, "/config_", knob->name, "_", value, ".json");
      absl::Status written = variant.ok() ? WriteJsonFile(path, *variant) : variant.status();
      if (!written.ok()) {
        std::filesystem::remove_all(scratch);
        return written;
      }
      for (const std::string& mode : o.modes) {
        if (mode == "single") continue;  // the knobs are a cluster's
        contenders.push_back({absl::StrCat("strata ", mode, " ", knob->name, "=", value),
                              Kind::kStrata, mode, path, value});
      }
    }
  }
  for (const std::string& mode : o.modes) {
    if (!knob.has_value() || mode == "single") {
      contenders.push_back({"strata " + mode, Kind::kStrata, mode, "", ""});
    }
  }
  const bool has_single = std::find(o.modes.begin(), o.modes.end(), "single") != o.modes.end();
  const bool torch = o.with_peer && PythonHasTorch(o.python, scratch);
  if (o.with_peer && !torch) {
    std::printf("peers: skipped (%s cannot import torch; apt-get install python3-torch)\n",
                o.python.c_str());
  }
  nlohmann::json same_computation;
  if (torch) {
    TrainCheckOptions check;
    check.config_path = o.config;
    check.python = o.python;
    check.threads = o.threads;
    check.batch = batch;
    check.scratch = scratch;
    absl::StatusOr<nlohmann::json> checked = CheckPeerComputesTheSame(config, check);
    if (!checked.ok()) {
      std::filesystem::remove_all(scratch);
      return checked.status();
    }
    same_computation = *checked;
  }
  if (torch && has_single) contenders.push_back({"pytorch", Kind::kTorch, "", "", ""});
  if (torch && cluster_modes) contenders.push_back({"pytorch ddp", Kind::kTorchDdp, "", "", ""});

  TrainReport report;
  report.sweep_parameter = sweep.parameter;
  const double limit_ips = gflops * 1e9 / train_flops;
  report.facts = {{"config", o.config},
                  {"batch_size", batch},
                  {"threads", o.threads},
                  {"steps", o.steps},
                  {"repeat", o.repeat},
                  {"servers", o.cluster.servers},
                  {"colocated_servers", o.cluster.colocate_servers},
                  {"conv_workers", o.cluster.conv_workers},
                  {"fc_workers", o.cluster.fc_workers},
                  {"bandwidth", o.cluster.bandwidth},
                  {"latency", o.cluster.latency},
                  {"sgemm_gflops", gflops},
                  {"training_flops_per_image", train_flops},
                  {"limit_images_per_sec", limit_ips},
                  {"title", absl::StrFormat("%s: %d conv workers, %d FC, %d server(s), batch %d",
                                            std::filesystem::path(o.config).filename().string(),
                                            o.cluster.conv_workers, o.cluster.fc_workers,
                                            o.cluster.servers, batch)}};
  if (!same_computation.is_null()) report.facts["same_computation"] = same_computation;
  std::vector<std::string> values = sweep.values;
  if (values.empty()) values.push_back("");

  Runner runner(o, batch, scratch,
                o.cost_model_out.empty() ? RecordsWanted::kNone
                : worker_speed_model     ? RecordsWanted::kWorkerSpeed
                                         : RecordsWanted::kLinkRate);
  // Every run of each knob value (for a worker-speed cost model), and every
  // run's readings (for a link-rate one).
  std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>> speed_runs;
  std::vector<secbad::LinkRateRun> link_runs;
  ProgressBar progress(static_cast<int>(values.size() * contenders.size()) * o.repeat);
  nlohmann::json ratios = nlohmann::json::object();
  nlohmann::json best_static = nlohmann::json::object();
  std::vector<double> rates_gbit;  // each point's link rate, 0 on loopback
  for (const std::string& value : values) {
    NetworkSetting net;
    net.bandwidth = o.cluster.bandwidth;
    net.latency = o.cluster.latency;
    SweepPoint point;
    point.value = value;
    rates_gbit.push_back(
        o.cluster.bandwidth.empty() ? 0.0 : *ParseBandwidth(o.cluster.bandwidth) * 8 / 1e9);
    if (sweep.parameter == "bandwidth") {
      net.bandwidth = value;
      point.numeric = *ParseBandwidth(value) * 8;
      rates_gbit.back() = point.numeric / 1e9;
    } else if (sweep.parameter == "latency") {
      net.latency = value;
      point.numeric = *ParseLatency(value);
    } else if (sweep.parameter == "cpu") {
      net.cpu_schedule = CpuScheduleOf(value);
    }
    for (const Contender& c : contenders) point.contenders.push_back({c.label, {}, 0, {}});
    const std::string at = value.empty() ? "" : absl::StrCat(" @ ", sweep.parameter, "=", value);
    for (int rep = 0; rep < o.repeat; ++rep) {
      for (size_t i = 0; i < contenders.size(); ++i) {  // A B A B: drift hits all alike
        progress.Begin(contenders[i].label + at);
        absl::StatusOr<RunResult> r = runner.Run(contenders[i], net);
        if (!r.ok()) {
          progress.End("failed");
          return r.status();
        }
        ContenderResult& c = point.contenders[i];
        c.images_per_sec.push_back(r->images_per_sec);
        if (!r->speed_samples.empty()) {
          speed_runs[contenders[i].knob_value].push_back(std::move(r->speed_samples));
        }
        if (!r->communication_seconds.empty() && !contenders[i].knob_value.empty()) {
          link_runs.push_back({contenders[i].knob_value, std::move(r->communication_seconds)});
        }
        if (r->bytes_per_iteration > 0) c.bytes_per_iteration = r->bytes_per_iteration;
        if (!r->seconds_per_iteration.empty()) {
          // The breakdown of the median run would need every run's; the
          // mean over repetitions is what is kept.
          for (const auto& [part, seconds] : r->seconds_per_iteration) {
            c.seconds_per_iteration[part] += seconds / o.repeat;
          }
        }
        progress.End(absl::StrFormat("%8.0f images/s", r->images_per_sec));
      }
    }
    std::printf("\n%s%s",
                value.empty() ? "" : absl::StrCat(sweep.parameter, " ", value, ":\n").c_str(),
                FormatPointTable(point).c_str());
    if (knob.has_value()) {
      best_static[value.empty() ? "all" : value] =
          PrintBestStatic(point, contenders, knob->name, o.modes);
    }
    nlohmann::json point_ratios;
    PrintRatios(point, point_ratios);
    if (!point_ratios.is_null()) ratios[value.empty() ? "all" : value] = point_ratios["ratios"];
    std::printf("\n");
    report.points.push_back(std::move(point));
  }
  if (has_single) {
    std::printf(
        "limit (single process): %.1f MFLOP per training image at %.1f GFLOP/s = %.0f "
        "images/s\n",
        train_flops / 1e6, gflops, limit_ips);
  }
  std::filesystem::remove_all(scratch);
  nlohmann::json json = ReportToJson(report);
  json["ratios"] = ratios;
  if (knob.has_value()) json["best_static"] = best_static;
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, json));
  if (!o.cost_model_out.empty()) {
    const std::string mode = *std::find_if(o.modes.begin(), o.modes.end(),
                                           [](const std::string& m) { return m != "single"; });
    if (worker_speed_model) {
      STRATA_RETURN_IF_ERROR(
          WriteWorkerSpeedModel(speed_runs, mode, batch, o.cluster.conv_workers, o.cost_model_out));
    } else {
      STRATA_RETURN_IF_ERROR(WriteCostModel(report, rates_gbit, contenders, link_runs, knob->name,
                                            mode, o.cost_model_out));
    }
  }
  if (!o.csv_out.empty()) {
    std::ofstream out(o.csv_out);
    out << ReportToCsv(report);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", o.csv_out));
  }
  if (!o.plot_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteThroughputPlot(report, o.plot_out));
    std::printf("plot: %s\n", o.plot_out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
