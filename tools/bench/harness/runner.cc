#include "tools/bench/harness/runner.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "tools/bench/harness/progress_bar.h"

namespace strata::bench {

absl::StatusOr<BenchReport> RunBenchmark(const BenchmarkDescription& d) {
  if (d.repeat < 1 || d.contenders.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        d.name, ": nothing to run (", d.contenders.size(), " contenders, ", d.repeat, " repeats)"));
  }
  BenchReport report;
  report.benchmark = d.name;
  report.figure = d.figure;
  report.facts = d.facts;
  report.sweep_parameter = d.sweep_parameter;
  if (d.check) {
    STRATA_ASSIGN_OR_RETURN(report.facts["same_computation"], d.check());
  }
  std::vector<std::string> points = d.points;
  if (points.empty()) points.push_back("");
  ProgressBar progress(static_cast<int>(points.size() * d.contenders.size()) * d.repeat);
  for (const std::string& value : points) {
    SweepPoint point;
    point.value = value;
    point.numeric = d.numeric && !value.empty() ? d.numeric(value) : 0.0;
    for (const ContenderDescription& c : d.contenders)
      point.contenders.push_back({c.label, {}, 0, {}});
    const std::string at = value.empty() ? "" : absl::StrCat(" @ ", d.sweep_parameter, "=", value);
    for (int repeat = 0; repeat < d.repeat; ++repeat) {
      for (size_t i = 0; i < d.contenders.size(); ++i) {  // A B A B: drift hits all alike
        progress.Begin(d.contenders[i].label + at);
        absl::StatusOr<RunMeasurement> run = d.contenders[i].run(value);
        if (!run.ok()) {
          progress.End("failed");
          return run.status();
        }
        ContenderResult& c = point.contenders[i];
        c.runs.push_back(run->figure);
        if (run->bytes_per_iteration > 0) c.bytes_per_iteration = run->bytes_per_iteration;
        // The breakdown of the median run would need every run's; the mean
        // over the runs is what is kept.
        for (const auto& [part, seconds] : run->seconds_per_iteration) {
          c.seconds_per_iteration[part] += seconds / d.repeat;
        }
        progress.End(absl::StrFormat("%8.*f %s", d.figure.decimals, run->figure, d.figure.unit));
      }
    }
    if (d.tables) {
      std::printf("\n%s%s",
                  value.empty() ? "" : absl::StrCat(d.sweep_parameter, " ", value, ":\n").c_str(),
                  FormatPointTable(point, d.figure).c_str());
    }
    if (d.after_point) STRATA_RETURN_IF_ERROR(d.after_point(point));
    std::printf("\n");
    std::fflush(stdout);
    report.points.push_back(std::move(point));
  }
  return report;
}

absl::Status WriteReport(const BenchReport& report, const nlohmann::json& extra,
                         const std::string& json_path, const std::string& csv_path) {
  if (!json_path.empty()) {
    nlohmann::json json = ReportToJson(report);
    for (const auto& [key, value] : extra.items()) json[key] = value;
    STRATA_RETURN_IF_ERROR(WriteJsonFile(json_path, json));
  }
  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << ReportToCsv(report);
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", csv_path));
  }
  return absl::OkStatus();
}

}  // namespace strata::bench
