#include "tools/bench/model_table.h"

#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/layer_timing.h"
#include "tools/bench/traffic_plan.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

using nlohmann::json;

std::string ConfigPath(const std::string& model) {
  if (absl::StrContains(model, '/') || absl::EndsWith(model, ".json")) return model;
  return SourceDir() + "/configs/" + model + ".json";
}

// A contender's median images/s (over the whole run, set-up included),
// bytes per iteration and its conv workers' mean wall seconds per
// iteration (what the plan predicts; 0 when not reported) in a train
// report (all 0 when it did not run).
struct Measured {
  double images_per_sec = 0;
  double bytes_per_iteration = 0;
  double seconds_per_iteration = 0;
};
Measured Find(const json& report, const std::string& label) {
  for (const json& c : report["points"][0]["contenders"]) {
    if (c["label"] != label) continue;
    Measured m{c.value("median_images_per_sec", 0.0), c.value("bytes_per_iteration", 0.0), 0.0};
    if (c.contains("seconds_per_iteration")) {
      for (const auto& [part, seconds] : c["seconds_per_iteration"].items()) {
        m.seconds_per_iteration += seconds.get<double>();
      }
    }
    return m;
  }
  return {};
}

double Ratio(double a, double b) { return b > 0 ? a / b : 0; }

struct MeasuredModel {
  json row;     // the table's row
  json report;  // the train benchmark's whole report
};

// Runs the train benchmark on `o.config` (its report to `o.json_out`) and
// the plan for the same shape, and makes the model's row.
absl::StatusOr<MeasuredModel> MeasureModel(TrainBenchOptions o, double bandwidth) {
  o.plot_out.clear();
  o.csv_out.clear();
  std::printf("\n== %s ==\n", o.config.c_str());
  std::fflush(stdout);
  STRATA_RETURN_IF_ERROR(RunTrainBench(o));
  std::ifstream in(o.json_out);
  MeasuredModel m;
  m.report = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (m.report.is_discarded()) {
    return absl::InternalError(absl::StrCat("cannot read back the report of ", o.config));
  }
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(o.config));
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const ModelFacts facts = FactsOf(*model);
  const int64_t batch = m.report["batch_size"].get<int64_t>();
  // Every process of the measured cluster runs on this machine's cores.
  ClusterShape shape{o.cluster.servers, o.cluster.conv_workers, o.cluster.fc_workers, batch,
                     o.cluster.colocate_servers};
  shape.threads = o.threads;
  shape.shared_cores = static_cast<int>(std::thread::hardware_concurrency());
  STRATA_ASSIGN_OR_RETURN(LayerCalibration calibration, CalibrateForShape(*model, shape));
  STRATA_ASSIGN_OR_RETURN(TrafficPlan plan,
                          PlanTraffic(facts, shape, bandwidth, calibration.costs));
  const Measured ps = Find(m.report, "strata ps"), st = Find(m.report, "strata stanza"),
                 ddp = Find(m.report, "pytorch ddp");
  m.row = {
      {"model", config.name},
      {"fc_share",
       static_cast<double>(facts.head_parameters) / static_cast<double>(facts.parameters)},
      {"ps",
       {{"images_per_sec", ps.images_per_sec}, {"bytes_per_iteration", ps.bytes_per_iteration}}},
      {"stanza",
       {{"images_per_sec", st.images_per_sec}, {"bytes_per_iteration", st.bytes_per_iteration}}},
      {"ddp", {{"images_per_sec", ddp.images_per_sec}}},
      {"stanza_over_ps",
       {{"measured", Ratio(st.images_per_sec, ps.images_per_sec)},
        {"measured_per_iteration", Ratio(ps.seconds_per_iteration, st.seconds_per_iteration)},
        {"planned", Ratio(plan.ps.seconds_per_iteration, plan.stanza.seconds_per_iteration)}}},
      {"stanza_over_ddp",
       {{"measured", Ratio(st.images_per_sec, ddp.images_per_sec)},
        {"planned", Ratio(plan.ddp.seconds_per_iteration, plan.stanza.seconds_per_iteration)}}}};
  return m;
}

}  // namespace

absl::Status RunModelTable(const TrainBenchOptions& base, const std::vector<std::string>& models,
                           const std::string& json_out) {
  if (models.empty()) return absl::InvalidArgumentError("--models lists no model");
  if (!base.sweep.empty()) {
    return absl::InvalidArgumentError("--models runs one network setting; drop --sweep");
  }
  double bandwidth = 0;  // loopback: the plan counts no link time
  if (!base.cluster.bandwidth.empty()) {
    STRATA_ASSIGN_OR_RETURN(bandwidth, ParseBandwidth(base.cluster.bandwidth));
  }
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch, ScratchDirectory::Make("strata_models"));
  json rows = json::array(), reports = json::array();
  for (const std::string& model : models) {
    TrainBenchOptions o = base;
    o.config = ConfigPath(model);
    o.json_out = absl::StrCat(scratch.path(), "/", rows.size(), ".json");
    STRATA_ASSIGN_OR_RETURN(MeasuredModel measured, MeasureModel(o, bandwidth));
    rows.push_back(measured.row);
    reports.push_back(measured.report);
  }

  // stanza/ps twice: by images/s over the whole run, and by the conv
  // workers' seconds per iteration, which is what the plan predicts (a
  // short run's set-up weighs on its images/s).
  std::printf("\n%-16s %8s %12s %12s %9s %9s %9s %9s %18s %18s\n", "model", "FC share", "ps MB/it",
              "stanza MB/it", "ps img/s", "stanza", "ddp", "stanza/ps", "per it. (plan)",
              "stanza/ddp (plan)");
  for (const json& r : rows) {
    std::printf(
        "%-16s %7.1f%% %12.1f %12.1f %9.1f %9.1f %9.1f %8.2fx %9.2fx (%5.2fx) %9.2fx (%5.2fx)\n",
        r["model"].get<std::string>().c_str(), 100 * r["fc_share"].get<double>(),
        r["ps"]["bytes_per_iteration"].get<double>() / 1e6,
        r["stanza"]["bytes_per_iteration"].get<double>() / 1e6,
        r["ps"]["images_per_sec"].get<double>(), r["stanza"]["images_per_sec"].get<double>(),
        r["ddp"]["images_per_sec"].get<double>(), r["stanza_over_ps"]["measured"].get<double>(),
        r["stanza_over_ps"]["measured_per_iteration"].get<double>(),
        r["stanza_over_ps"]["planned"].get<double>(),
        r["stanza_over_ddp"]["measured"].get<double>(),
        r["stanza_over_ddp"]["planned"].get<double>());
  }
  if (!json_out.empty()) {
    STRATA_RETURN_IF_ERROR(WriteJsonFile(json_out, {{"models", rows}, {"reports", reports}}));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
