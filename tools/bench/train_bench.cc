#include "tools/bench/train_bench.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/model/job_config.h"
#include "core/model/model.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/harness/runner.h"
#include "tools/bench/machine_limits.h"
#include "tools/bench/throughput_plot.h"
#include "tools/bench/train_check.h"
#include "tools/bench/train_contenders.h"
#include "tools/bench/train_options.h"
#include "tools/bench/train_summary.h"
#include "tools/fit/cost_model_fit.h"
#include "tools/launch/knob_variants.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

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
  TrainContenderRunner runner(o, batch, scratch.path(), RecordsWantedBy(o));
  fit::FitInputs recorded;  // the runs' conv worker speeds and link readings
  std::map<std::string, double> peak_memory;  // per contender, the most over its runs
  for (const TrainContender& c : contenders) {
    d.contenders.push_back(
        {c.label, [&, c](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           STRATA_ASSIGN_OR_RETURN(TrainRun r, runner.Run(c, SettingAt(o, sweep, value)));
           if (!r.speed_samples.empty())
             recorded.speed_runs[c.knob_value].push_back(r.speed_samples);
           if (!r.communication_seconds.empty() && !c.knob_value.empty()) {
             recorded.link_runs.push_back({c.knob_value, r.communication_seconds});
           }
           if (r.peak_memory_bytes.has_value()) {
             peak_memory[c.label] = std::max(peak_memory[c.label], *r.peak_memory_bytes);
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
  for (const auto& [label, bytes] : peak_memory) {
    std::printf("peak device memory: %s %.1f MiB\n", label.c_str(), bytes / (1 << 20));
    extra["peak_memory_bytes"][label] = bytes;
  }
  const fit::FitInputs fit_inputs = FitInputsOf(o, knob, batch, report, contenders, recorded);
  if (RecordsWantedBy(o) != RecordsWanted::kNone) extra["fit_inputs"] = fit_inputs.ToJson();
  STRATA_RETURN_IF_ERROR(WriteReport(report, extra, o.json_out, o.csv_out));
  if (!o.cost_model_out.empty()) {
    STRATA_RETURN_IF_ERROR(fit::FitAndWriteCostModel(fit_inputs, o.cost_model_out));
  }
  if (!o.plot_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteThroughputPlot(report, o.plot_out));
    std::printf("plot: %s\n", o.plot_out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
