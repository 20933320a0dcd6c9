#include "tools/bench/plan_report.h"


#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "tools/bench/harness/plot.h"
#include "tools/bench/layer_timing.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

using nlohmann::json;

std::string Servers(const ClusterShape& shape) {
  if (shape.colocated_servers) return "a server on every conv worker's host";
  return absl::StrCat(shape.servers, shape.servers == 1 ? " server" : " servers");
}

json ModeJson(const ModePlan& m) {
  return {{"bytes_per_iteration", m.bytes_per_iteration},
          {"busiest_link", m.busiest_link},
          {"compute_seconds", m.compute_seconds},
          {"communication_seconds", m.communication_seconds},
          {"seconds_per_iteration", m.seconds_per_iteration},
          {"images_per_sec", m.images_per_sec}};
}

// The plan of `shape` as given: one row per mode, then stanza per F.
absl::StatusOr<json> PrintShape(const ModelFacts& facts, const ClusterShape& shape,
                                const std::string& bandwidth_name, double bandwidth,
                                const ComputeCosts& costs) {
  STRATA_ASSIGN_OR_RETURN(TrafficPlan plan, PlanTraffic(facts, shape, bandwidth, costs));
  std::printf("\n%d conv workers, %d FC workers, %s, global batch %lld, %s links:\n",
              shape.conv_workers, shape.fc_workers, Servers(shape).c_str(),
              static_cast<long long>(shape.global_batch), bandwidth_name.c_str());
  std::printf("%-8s %16s %22s %11s %11s %12s %12s\n", "mode", "bytes/iteration", "busiest link",
              "compute s", "network s", "iteration s", "images/s");
  for (const auto& [name, m] : {std::pair<const char*, const ModePlan&>{"ps", plan.ps},
                                std::pair<const char*, const ModePlan&>{"stanza", plan.stanza},
                                std::pair<const char*, const ModePlan&>{"ddp", plan.ddp}}) {
    std::printf("%-8s %13.3f MB %22s %11.4f %11.4f %12.4f %12.1f\n", name,
                m.bytes_per_iteration / 1e6, m.busiest_link.c_str(), m.compute_seconds,
                m.communication_seconds, m.seconds_per_iteration, m.images_per_sec);
  }
  std::printf(
      "stanza moves %.1fx fewer bytes than ps; predicted speed-up %.2fx over ps, %.2fx "
      "over ddp\n",
      plan.ps.bytes_per_iteration / plan.stanza.bytes_per_iteration,
      plan.ps.seconds_per_iteration / plan.stanza.seconds_per_iteration,
      plan.ddp.seconds_per_iteration / plan.stanza.seconds_per_iteration);
  for (int f = 1; f <= shape.conv_workers; ++f) {
    if (shape.conv_workers % f != 0) continue;
    ClusterShape trial = shape;
    trial.fc_workers = f;
    STRATA_ASSIGN_OR_RETURN(TrafficPlan p, PlanTraffic(facts, trial, bandwidth, costs));
    std::printf("  with %d FC worker(s): %.4f s per iteration (busiest link: %s)\n", f,
                p.stanza.seconds_per_iteration, p.stanza.busiest_link.c_str());
  }
  STRATA_ASSIGN_OR_RETURN(int best, RecommendedFcWorkers(facts, shape, bandwidth, costs));
  std::printf("recommended FC workers at %s: %d\n", bandwidth_name.c_str(), best);
  return json{{"bandwidth", bandwidth_name},
              {"ps", ModeJson(plan.ps)},
              {"stanza", ModeJson(plan.stanza)},
              {"ddp", ModeJson(plan.ddp)},
              {"recommended_fc_workers", best}};
}

// N = 4, 8, ..., 1024 conv workers with the per-worker batch of `shape`,
// stanza with the F recommended for each N.
absl::StatusOr<json> PrintScaling(const ModelFacts& facts, const ClusterShape& shape,
                                  const std::string& bandwidth_name, double bandwidth,
                                  const ComputeCosts& costs) {
  const int64_t per_worker = shape.global_batch / shape.conv_workers;
  std::printf("\nscaling at %s, %lld images per conv worker, %s:\n", bandwidth_name.c_str(),
              static_cast<long long>(per_worker), Servers(shape).c_str());
  std::printf("%6s %6s %12s %12s %12s %12s %12s %12s %12s\n", "N", "F", "ps s", "ddp s", "stanza s",
              "stanza img/s", "vs ps", "vs ddp", "stanza link");
  json rows = json::array();
  for (int n = 4; n <= 1024; n *= 2) {
    ClusterShape s = shape;
    s.conv_workers = n;
    s.global_batch = per_worker * n;
    STRATA_ASSIGN_OR_RETURN(s.fc_workers, RecommendedFcWorkers(facts, s, bandwidth, costs));
    STRATA_ASSIGN_OR_RETURN(TrafficPlan p, PlanTraffic(facts, s, bandwidth, costs));
    const double vs_ps = p.ps.seconds_per_iteration / p.stanza.seconds_per_iteration;
    const double vs_ddp = p.ddp.seconds_per_iteration / p.stanza.seconds_per_iteration;
    std::printf("%6d %6d %12.4f %12.4f %12.4f %12.0f %11.2fx %11.2fx %12s\n", n, s.fc_workers,
                p.ps.seconds_per_iteration, p.ddp.seconds_per_iteration,
                p.stanza.seconds_per_iteration, p.stanza.images_per_sec, vs_ps, vs_ddp,
                p.stanza.busiest_link.c_str());
    rows.push_back({{"conv_workers", n},
                    {"fc_workers", s.fc_workers},
                    {"ps_seconds", p.ps.seconds_per_iteration},
                    {"ddp_seconds", p.ddp.seconds_per_iteration},
                    {"stanza_seconds", p.stanza.seconds_per_iteration},
                    {"stanza_over_ps", vs_ps},
                    {"stanza_over_ddp", vs_ddp}});
  }
  return json{{"bandwidth", bandwidth_name}, {"rows", rows}};
}

}  // namespace

absl::Status RunPlan(const PlanOptions& o) {
  if (o.config.empty()) return absl::InvalidArgumentError("plan: --config is required");
  if (o.bandwidths.empty()) return absl::InvalidArgumentError("plan: name a --bandwidth");
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(o.config));
  ClusterShape shape = o.shape;
  if (shape.global_batch <= 0) shape.global_batch = config.training.batch_size;
  if (shape.conv_workers < 1 || shape.global_batch % shape.conv_workers != 0) {
    return absl::InvalidArgumentError(absl::StrCat("plan: the global batch ", shape.global_batch,
                                                   " does not divide over ", shape.conv_workers,
                                                   " conv workers"));
  }
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const ModelFacts facts = FactsOf(*model);
  std::printf("strata_bench plan: %s\n", o.config.c_str());
  std::printf(
      "parameters: %lld (trunk %lld, head %lld = %.1f%%); boundary activations %lld per sample\n",
      static_cast<long long>(facts.parameters), static_cast<long long>(facts.trunk_parameters),
      static_cast<long long>(facts.head_parameters),
      100.0 * static_cast<double>(facts.head_parameters) / static_cast<double>(facts.parameters),
      static_cast<long long>(facts.boundary_elements));

  ComputeCosts costs;
  json layers = json::array();
  if (o.gflops > 0) {
    costs = CostsFromFlops(facts, o.gflops);
  } else {
    const int64_t per_worker = shape.global_batch / shape.conv_workers;
    std::printf(
        "calibrating: every layer, forward and backward, at batch %lld with %d thread%s (the "
        "head also at the FC worker's batch %lld)\n",
        static_cast<long long>(per_worker), shape.threads, shape.threads == 1 ? "" : "s",
        static_cast<long long>(shape.global_batch / shape.fc_workers));
    std::fflush(stdout);
    STRATA_ASSIGN_OR_RETURN(LayerCalibration c, CalibrateForShape(*model, shape));
    std::printf("%-28s %-14s %6s %14s %14s\n", "layer", "kind", "part", "fwd ms/image",
                "bwd ms/image");
    for (const LayerTiming& t : c.layers) {
      std::printf("%-28s %-14s %6s %14.3f %14.3f\n", t.name.c_str(), t.kind.c_str(),
                  t.in_trunk ? "trunk" : "head", 1e3 * t.forward_seconds, 1e3 * t.backward_seconds);
      layers.push_back({{"name", t.name},
                        {"kind", t.kind},
                        {"trunk", t.in_trunk},
                        {"forward_seconds", t.forward_seconds},
                        {"backward_seconds", t.backward_seconds}});
    }
    costs = c.costs;
  }
  std::printf("compute per image (%s): trunk %.3f ms, head %.3f ms (%.3f ms at the FC worker)\n",
              costs.source.c_str(), 1e3 * costs.trunk_seconds, 1e3 * costs.head_seconds,
              1e3 * costs.fc_head());
  if (shape.shared_cores > 0) {
    std::printf("the processes share %d cores (%d thread%s each)\n", shape.shared_cores,
                shape.threads, shape.threads == 1 ? "" : "s");
  }

  json shapes = json::array(), scaling = json::array();
  for (const std::string& name : o.bandwidths) {
    STRATA_ASSIGN_OR_RETURN(double bandwidth, ParseBandwidth(name));
    STRATA_ASSIGN_OR_RETURN(json here, PrintShape(facts, shape, name, bandwidth, costs));
    shapes.push_back(here);
    STRATA_ASSIGN_OR_RETURN(json rows, PrintScaling(facts, shape, name, bandwidth, costs));
    scaling.push_back(rows);
  }
  if (!o.plot.empty()) {
    const json drawn = {
        {"title", absl::StrCat("strata_bench plan: ", config.name,
                               ", predicted speed-up of stanza (", Servers(shape), ")")},
        {"scaling", scaling}};
    STRATA_RETURN_IF_ERROR(DrawReport(drawn, o.plot, "scaling"));
    std::printf("plot: %s\n", o.plot.c_str());
  }
  if (!o.json_out.empty()) {
    STRATA_RETURN_IF_ERROR(
        WriteJsonFile(o.json_out, {{"config", o.config},
                                   {"servers", Servers(shape)},
                                   {"parameters", facts.parameters},
                                   {"head_parameters", facts.head_parameters},
                                   {"compute",
                                    {{"trunk_seconds_per_image", costs.trunk_seconds},
                                     {"head_seconds_per_image", costs.head_seconds},
                                     {"fc_head_seconds_per_image", costs.fc_head()},
                                     {"source", costs.source}}},
                                   {"layers", layers},
                                   {"shape", shapes},
                                   {"scaling", scaling}}));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
