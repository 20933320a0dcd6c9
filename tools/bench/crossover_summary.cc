#include "tools/bench/crossover_summary.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "core/util/statistics.h"
#include "scheduler/crossover.h"
#include "tools/bench/crossover_records.h"
#include "tools/bench/harness/plot.h"
#include "tools/bench/harness/report.h"
#include "tools/bench/throughput_plot.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

// The throughput of every policy and the ideal bound against the swept
// link rate.
absl::Status DrawThroughput(const CrossoverBenchOptions& o, const std::vector<PointResult>& points,
                            const std::string& png_path) {
  BenchReport plot;
  plot.sweep_parameter = "bandwidth";
  plot.facts["title"] =
      absl::StrFormat("strata_bench crossover: %zu jobs, %s mode, %d conv worker(s)", o.jobs.size(),
                      o.cluster.mode.c_str(), o.cluster.conv_workers);
  for (size_t i = 0; i < points.size(); ++i) {
    SweepPoint p;
    p.value = o.bandwidths[i];
    STRATA_ASSIGN_OR_RETURN(const double bytes_per_second, ParseBandwidth(o.bandwidths[i]));
    p.numeric = bytes_per_second * 8;
    p.contenders.push_back({"ideal overlap (from the alone runs)", {points[i].ideal}, 0, {}});
    for (const std::string& policy : o.policies) {
      p.contenders.push_back({policy, points[i].aggregate.at(policy), 0, {}});
    }
    plot.points.push_back(std::move(p));
  }
  return WriteThroughputPlot(plot, png_path);
}

// "out.png" -> "out.timeline.png".
std::string TimelinePathFor(const std::string& plot_path) {
  const std::filesystem::path p(plot_path);
  return (p.parent_path() / (p.stem().string() + ".timeline" + p.extension().string())).string();
}

}  // namespace

absl::StatusOr<PointResult> Summarise(const CrossoverBenchOptions& o, const PointRuns& runs) {
  const size_t jobs = o.jobs.size();
  PointResult point;
  point.aggregate = runs.aggregate;
  point.records = runs.records;
  const std::vector<std::vector<AloneRun>>& alone = runs.alone;
  // The bound, from the medians of each job's alone runs.
  double c = 0, m = 0, images_per_pair = 0;
  for (size_t job = 0; job < jobs; ++job) {
    std::vector<double> cs, ms;
    for (const AloneRun& r : alone[job]) {
      cs.push_back(r.compute);
      ms.push_back(r.communication);
    }
    c += Median(cs);
    m += Median(ms);
    images_per_pair += alone[job].front().batch;
  }
  point.compute = c;
  point.communication = m;
  const double ideal = point.ideal = images_per_pair / std::max(c, m);
  const double in_turns = point.in_turns = images_per_pair / (c + m);

  std::printf(
      "\nalone, per iteration (medians): compute %.1f ms, communication %.1f ms summed "
      "over the jobs; ideal overlap %.0f images/s (%.2fx taking turns at %.0f)\n",
      c * 1e3, m * 1e3, ideal, ideal / in_turns, in_turns);
  std::printf("%-10s %14s %12s %8s %8s\n", "policy", "images/s (med)", "min..max", "of ideal",
              "vs excl.");
  std::map<std::string, double> medians;
  for (const std::string& policy : o.policies) medians[policy] = Median(point.aggregate[policy]);
  nlohmann::json& report = point.report;
  report = {{"jobs", o.jobs},
            {"mode", o.cluster.mode},
            {"servers", o.cluster.servers},
            {"conv_workers", o.cluster.conv_workers},
            {"steps", o.steps},
            {"rounds", o.repeat},
            {"threads", o.threads},
            {"bandwidth", o.cluster.bandwidth.empty() ? "loopback" : o.cluster.bandwidth},
            {"compute_seconds_per_iteration", c},
            {"communication_seconds_per_iteration", m},
            {"ideal_images_per_sec", ideal},
            {"in_turns_images_per_sec", in_turns}};
  for (const std::string& policy : o.policies) {
    const std::vector<double>& v = point.aggregate[policy];
    const double med = medians[policy];
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const bool has_exclusive = medians.count("exclusive") > 0 && medians["exclusive"] > 0;
    std::printf("%-10s %14.0f %5.0f..%-6.0f %7.1f%% %8s\n", policy.c_str(), med, *lo, *hi,
                100 * med / ideal,
                has_exclusive ? absl::StrFormat("%.3fx", med / medians["exclusive"]).c_str() : "-");
    report["policies"][policy] = {
        {"images_per_sec", v}, {"median", med}, {"fraction_of_ideal", med / ideal}};
  }
  if (!o.weights.empty()) report["weights"] = o.weights;
  STRATA_ASSIGN_OR_RETURN(const std::vector<double> weights, ParseDeviceWeights(o.weights, jobs));
  double weight_sum = 0;
  for (double w : weights) weight_sum += w;
  for (const std::string& policy : o.policies) {
    const auto shares_of = runs.shares.find(policy);
    if (shares_of == runs.shares.end()) continue;
    const std::vector<std::vector<double>>& shares = shares_of->second;
    if (shares.size() != jobs) continue;
    std::string line;
    nlohmann::json medians_json = nlohmann::json::array();
    for (size_t job = 0; job < jobs; ++job) {
      const double share = Median(shares[job]);
      medians_json.push_back(share);
      absl::StrAppendFormat(&line, "%sjob %zu %.1f%% (weight %.1f%%)", job == 0 ? "" : ", ",
                            job + 1, 100 * share, 100 * weights[job] / weight_sum);
    }
    std::printf("%s: contested device time %s\n", policy.c_str(), line.c_str());
    report["policies"][policy]["contested_share"] = medians_json;
    report["policies"][policy]["contested_share_per_round"] = shares;
  }
  if (medians.count("crossover") && medians.count("exclusive") && medians.count("naive")) {
    const double vs_exclusive = medians["crossover"] / medians["exclusive"];
    const double vs_naive = medians["crossover"] / medians["naive"];
    std::printf("crossover/exclusive %.3f, crossover/naive %.3f (medians of %d rounds)\n",
                vs_exclusive, vs_naive, o.repeat);
    report["crossover_over_exclusive"] = vs_exclusive;
    report["crossover_over_naive"] = vs_naive;
  }
  return point;
}

absl::Status WriteOutputs(const CrossoverBenchOptions& o, const std::vector<PointResult>& points) {
  const std::vector<std::string> links =
      o.bandwidths.empty() ? std::vector<std::string>{o.cluster.bandwidth} : o.bandwidths;
  if (links.size() > 1) {
    std::printf("sweep: %-10s %8s", "link", "ideal");
    for (const std::string& policy : o.policies) std::printf(" %10s", policy.c_str());
    std::printf("  (median images/s)\n");
    for (size_t i = 0; i < links.size(); ++i) {
      std::printf("       %-10s %8.0f", links[i].c_str(), points[i].ideal);
      for (const std::string& policy : o.policies) {
        std::printf(" %10.0f", Median(points[i].aggregate.at(policy)));
      }
      std::printf("\n");
    }
  }

  const std::string timeline = !o.timeline_out.empty()
                                   ? o.timeline_out
                                   : (o.plot_out.empty() ? "" : TimelinePathFor(o.plot_out));
  nlohmann::json spans;  // the timeline's, kept in the JSON to be drawn again
  if (!timeline.empty()) {
    STRATA_ASSIGN_OR_RETURN(spans, TimelineOf(points.back().records, o.policies, o.jobs.size()));
    STRATA_RETURN_IF_ERROR(DrawReport({{"timeline", spans}}, timeline, "timeline"));
    std::printf("timeline (the last round%s): %s\n",
                links.size() > 1 ? absl::StrCat(" at ", links.back()).c_str() : "",
                timeline.c_str());
  }
  if (!o.plot_out.empty()) {
    STRATA_RETURN_IF_ERROR(DrawThroughput(o, points, o.plot_out));
    std::printf("throughput: %s\n", o.plot_out.c_str());
  }
  if (!o.json_out.empty()) {
    nlohmann::json report;
    if (o.bandwidths.empty()) {
      report = points.front().report;
    } else {
      report = {{"sweep", "bandwidth"}, {"points", nlohmann::json::array()}};
      for (const PointResult& p : points) report["points"].push_back(p.report);
    }
    if (!spans.is_null()) report["timeline"] = spans;
    STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
