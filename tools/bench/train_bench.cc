#include "tools/bench/train_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/control/knobs.h"
#include "core/model/batch_shares.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/cost_model_fit.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/harness/runner.h"
#include "tools/bench/machine_limits.h"
#include "tools/bench/throughput_plot.h"
#include "tools/bench/train_check.h"
#include "tools/bench/train_contenders.h"
#include "tools/launch/knob_variants.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

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
nlohmann::json PrintBestStatic(const SweepPoint& point,
                               const std::vector<TrainContender>& contenders,
                               const std::string& knob, const std::vector<std::string>& modes) {
  nlohmann::json best = nlohmann::json::object();
  for (const std::string& mode : modes) {
    const TrainContender* fastest = nullptr;
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

// Whether --cost-model-out fits batch.shares' model (the conv workers'
// speeds) rather than a knob's against the link rate.
bool FitsWorkerSpeed(const TrainBenchOptions& o) {
  return !o.cost_model_out.empty() && absl::StartsWith(o.knob, std::string(kBatchSharesKnob) + "=");
}

// The options' contradictions, before anything runs.
absl::Status CheckOptions(const TrainBenchOptions& o, const Sweep& sweep) {
  if (o.config.empty()) return absl::InvalidArgumentError("train: --config is required");
  if (o.steps <= 0 || o.repeat <= 0 || o.threads <= 0) {
    return absl::InvalidArgumentError("train: --steps, --repeat and --threads must be > 0");
  }
  if (o.modes.empty()) return absl::InvalidArgumentError("train: --modes lists no mode");
  for (const std::string& mode : o.modes) {
    if (mode != "single" && mode != "ps" && mode != "stanza") {
      return absl::InvalidArgumentError(
          absl::StrCat("train: unknown mode \"", mode, "\" (use single, ps, stanza)"));
    }
  }
  if (!o.plot_out.empty() && sweep.parameter.empty()) {
    return absl::InvalidArgumentError("--plot needs a --sweep (throughput against its values)");
  }
  const int cluster_modes = static_cast<int>(std::count_if(
      o.modes.begin(), o.modes.end(), [](const std::string& m) { return m != "single"; }));
  if (!o.cost_model_out.empty() && (o.knob.empty() || cluster_modes != 1)) {
    return absl::InvalidArgumentError(
        "--cost-model-out needs --knob and one cluster mode in --modes");
  }
  if (!o.cost_model_out.empty() && !FitsWorkerSpeed(o) && sweep.parameter != "bandwidth" &&
      o.cluster.bandwidth.empty()) {
    return absl::InvalidArgumentError(
        "--cost-model-out for this knob needs --bandwidth or --sweep bandwidth=...: the model "
        "relates the knob's values to link rates");
  }
  return absl::OkStatus();
}

// The conditions of the point `value` of `sweep` ("" = the options' own).
NetworkSetting SettingAt(const TrainBenchOptions& o, const Sweep& sweep, const std::string& value) {
  NetworkSetting net;
  net.bandwidth = o.cluster.bandwidth;
  net.latency = o.cluster.latency;
  if (sweep.parameter == "bandwidth") net.bandwidth = value;
  if (sweep.parameter == "latency") net.latency = value;
  if (sweep.parameter == "cpu") net.cpu_schedule = CpuScheduleOf(value);
  return net;
}

// Strata in each mode (each cluster mode once per value of --knob, the job
// starting with it, its config written into `scratch`), then the PyTorch
// peers when `torch`.
absl::StatusOr<std::vector<TrainContender>> ContendersOf(const TrainBenchOptions& o, bool torch,
                                                         const std::string& scratch) {
  std::vector<TrainContender> contenders;
  if (!o.knob.empty()) {
    STRATA_ASSIGN_OR_RETURN(const KnobValues knob, ParseKnobValues(o.knob));
    STRATA_ASSIGN_OR_RETURN(const nlohmann::json raw, ReadJsonFile(o.config));
    for (const std::string& value : knob.values) {
      STRATA_ASSIGN_OR_RETURN(const nlohmann::json variant,
                              ConfigStartingWith(raw, knob.name, value));
      const std::string path = absl::StrCat(scratch, "/config_", knob.name, "_", value, ".json");
      STRATA_RETURN_IF_ERROR(WriteJsonFile(path, variant));
      for (const std::string& mode : o.modes) {
        if (mode == "single") continue;  // the knobs are a cluster's
        contenders.push_back({absl::StrCat("strata ", mode, " ", knob.name, "=", value),
                              TrainContenderKind::kStrata, mode, path, value});
      }
    }
  }
  for (const std::string& mode : o.modes) {
    if (o.knob.empty() || mode == "single") {
      contenders.push_back({"strata " + mode, TrainContenderKind::kStrata, mode, "", ""});
    }
  }
  const auto has = [&o](bool single) {
    return std::any_of(o.modes.begin(), o.modes.end(),
                       [single](const std::string& m) { return (m == "single") == single; });
  };
  if (torch && has(true)) contenders.push_back({"pytorch", TrainContenderKind::kTorch, "", "", ""});
  if (torch && has(false))
    contenders.push_back({"pytorch ddp", TrainContenderKind::kTorchDdp, "", "", ""});
  return contenders;
}

// What the report's JSON starts from: the job, the cluster, the machine.
nlohmann::json FactsOf(const TrainBenchOptions& o, int64_t batch, double gflops,
                       double train_flops) {
  const LaunchSpec& c = o.cluster;
  return {{"config", o.config},
          {"batch_size", batch},
          {"threads", o.threads},
          {"steps", o.steps},
          {"repeat", o.repeat},
          {"servers", c.servers},
          {"colocated_servers", c.colocate_servers},
          {"conv_workers", c.conv_workers},
          {"fc_workers", c.fc_workers},
          {"bandwidth", c.bandwidth},
          {"latency", c.latency},
          {"sgemm_gflops", gflops},
          {"training_flops_per_image", train_flops},
          {"limit_images_per_sec", gflops * 1e9 / train_flops},
          {"title", absl::StrFormat("%s: %d conv workers, %d FC, %d server(s), batch %d",
                                    std::filesystem::path(o.config).filename().string(),
                                    c.conv_workers, c.fc_workers, c.servers, batch)}};
}

// The run's setting, before anything runs.
void PrintSetting(const TrainBenchOptions& o, const Sweep& sweep, int64_t batch) {
  std::printf("strata_bench train: %s, global batch %lld, %d threads, %d steps x %d repeats\n",
              o.config.c_str(), static_cast<long long>(batch), o.threads, o.steps, o.repeat);
  if (std::all_of(o.modes.begin(), o.modes.end(), [](const auto& m) { return m == "single"; })) {
    return;
  }
  const LaunchSpec& c = o.cluster;
  const std::string network =
      sweep.parameter == "bandwidth" ? "swept"
      : c.bandwidth.empty()
          ? "loopback"
          : absl::StrCat(c.bandwidth, " per host, ",
                         c.latency == "0" ? "no added latency" : c.latency + " one way");
  std::printf("cluster: %d server(s)%s, %d conv workers, %d FC worker(s); network: %s\n", c.servers,
              c.colocate_servers ? " (each on a conv worker's host)" : "", c.conv_workers,
              c.fc_workers, network.c_str());
}

// The cost model --cost-model-out asks for, from what the runs measured.
struct CostModelInputs {
  std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>> speed_runs;
  std::vector<secbad::LinkRateRun> link_runs;
};

absl::Status FitCostModel(const TrainBenchOptions& o, const std::string& knob,
                          const BenchReport& report, const std::vector<TrainContender>& contenders,
                          const CostModelInputs& inputs, int64_t batch) {
  const std::string mode = *std::find_if(o.modes.begin(), o.modes.end(),
                                         [](const std::string& m) { return m != "single"; });
  if (FitsWorkerSpeed(o)) {
    return WriteWorkerSpeedModel(inputs.speed_runs, mode, batch, o.cluster.conv_workers,
                                 o.cost_model_out);
  }
  // Each point's link rate in Gbit/s.
  std::vector<double> rates_gbit;
  for (const SweepPoint& point : report.points) {
    const std::string rate =
        report.sweep_parameter == "bandwidth" ? point.value : o.cluster.bandwidth;
    rates_gbit.push_back(rate.empty() ? 0.0 : *ParseBandwidth(rate) * 8 / 1e9);
  }
  return WriteCostModel(report, rates_gbit, contenders, inputs.link_runs, knob, mode,
                        o.cost_model_out);
}

}  // namespace

absl::Status RunTrainBench(const TrainBenchOptions& o) {
  STRATA_ASSIGN_OR_RETURN(const Sweep sweep, ParseSweep(o));
  STRATA_RETURN_IF_ERROR(CheckOptions(o, sweep));
  if (!o.cluster.bandwidth.empty()) {
    STRATA_RETURN_IF_ERROR(ParseBandwidth(o.cluster.bandwidth).status());
  }
  STRATA_RETURN_IF_ERROR(ParseLatency(o.cluster.latency).status());
  STRATA_ASSIGN_OR_RETURN(const JobConfig config, LoadJobConfig(o.config));
  const int64_t batch = o.batch_size > 0 ? o.batch_size : config.training.batch_size;
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const double train_flops = static_cast<double>(model->TrainingFlopsPerSample());
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch, ScratchDirectory::Make("strata_bench"));

  PrintSetting(o, sweep, batch);
  const double gflops = MeasureSgemmGflops(2048, o.threads);
  std::printf("machine: SGEMM 2048^3 with %d threads: %.1f GFLOP/s\n", o.threads, gflops);
  std::fflush(stdout);
  const bool torch = o.with_peer && PythonHasTorch(o.python, scratch.path());
  STRATA_ASSIGN_OR_RETURN(const std::vector<TrainContender> contenders,
                          ContendersOf(o, torch, scratch.path()));
  if (o.with_peer && !torch) {
    std::printf("peers: skipped (%s cannot import torch; apt-get install python3-torch)\n",
                o.python.c_str());
  }

  BenchmarkDescription d;
  d.facts = FactsOf(o, batch, gflops, train_flops);
  d.sweep_parameter = sweep.parameter;
  d.points = sweep.values;
  d.numeric = [&sweep](const std::string& value) {
    return sweep.parameter == "bandwidth" ? *ParseBandwidth(value) * 8
           : sweep.parameter == "latency" ? *ParseLatency(value)
                                          : 0.0;
  };
  d.repeat = o.repeat;
  const TrainCheckOptions check = {o.config, o.python, o.threads, batch, scratch.path()};
  if (torch) d.check = [&] { return CheckPeerComputesTheSame(config, check); };
  TrainContenderRunner runner(o, batch, scratch.path(),
                              o.cost_model_out.empty() ? RecordsWanted::kNone
                              : FitsWorkerSpeed(o)     ? RecordsWanted::kWorkerSpeed
                                                       : RecordsWanted::kLinkRate);
  CostModelInputs fit;
  for (const TrainContender& c : contenders) {
    d.contenders.push_back(
        {c.label, [&, c](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           STRATA_ASSIGN_OR_RETURN(TrainRun r, runner.Run(c, SettingAt(o, sweep, value)));
           if (!r.speed_samples.empty()) fit.speed_runs[c.knob_value].push_back(r.speed_samples);
           if (!r.communication_seconds.empty() && !c.knob_value.empty()) {
             fit.link_runs.push_back({c.knob_value, r.communication_seconds});
           }
           return RunMeasurement{r.images_per_sec, r.bytes_per_iteration, r.seconds_per_iteration};
         }});
  }
  // The knob --knob names (ContendersOf parsed and checked it).
  const std::string knob = o.knob.substr(0, o.knob.find('='));
  nlohmann::json extra = {{"ratios", nlohmann::json::object()}};
  d.after_point = [&](const SweepPoint& point) -> absl::Status {
    const std::string key = point.value.empty() ? "all" : point.value;
    if (!knob.empty())
      extra["best_static"][key] = PrintBestStatic(point, contenders, knob, o.modes);
    nlohmann::json point_ratios;
    PrintRatios(point, point_ratios);
    if (!point_ratios.is_null()) extra["ratios"][key] = point_ratios["ratios"];
    return absl::OkStatus();
  };
  STRATA_ASSIGN_OR_RETURN(const BenchReport report, RunBenchmark(d));

  if (std::find(o.modes.begin(), o.modes.end(), "single") != o.modes.end()) {
    std::printf(
        "limit (single process): %.1f MFLOP per training image at %.1f GFLOP/s = %.0f "
        "images/s\n",
        train_flops / 1e6, gflops, gflops * 1e9 / train_flops);
  }
  STRATA_RETURN_IF_ERROR(WriteReport(report, extra, o.json_out, o.csv_out));
  if (!o.cost_model_out.empty()) {
    STRATA_RETURN_IF_ERROR(FitCostModel(o, knob, report, contenders, fit, batch));
  }
  if (!o.plot_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteThroughputPlot(report, o.plot_out));
    std::printf("plot: %s\n", o.plot_out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
