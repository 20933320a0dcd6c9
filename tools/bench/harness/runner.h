// The one loop of every benchmark of strata_bench. A benchmark describes
// its contenders (a label and how to run one once) and the points it
// measures them at; RunBenchmark then
//   1. checks, before anything is timed, that the contenders compute the
//      same (the description's `check`, when it has one);
//   2. runs every contender at every point `repeat` times, alternating
//      (A B C A B C), so that drift on a shared machine falls on every
//      contender alike, with a progress line;
//   3. prints each point's table (medians, spread, the ratio to the first
//      contender) and returns the report, which WriteReport writes as JSON
//      and CSV (report.h).
//
//   BenchmarkDescription d;
//   d.contenders.push_back({"strata ps", [&](const std::string& point) { ... }});
//   STRATA_ASSIGN_OR_RETURN(BenchReport report, RunBenchmark(d));
#ifndef STRATA_TOOLS_BENCH_HARNESS_RUNNER_H_
#define STRATA_TOOLS_BENCH_HARNESS_RUNNER_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "tools/bench/harness/report.h"

namespace strata::bench {

// What one run of a contender measured.
struct RunMeasurement {
  double figure = 0;                                    // the figure the contenders are compared by
  double bytes_per_iteration = 0;                       // 0: not measured
  std::map<std::string, double> seconds_per_iteration;  // empty: not measured
};

// A run that measured only the figure.
inline RunMeasurement FigureOnly(double figure) {
  RunMeasurement run;
  run.figure = figure;
  return run;
}

struct ContenderDescription {
  std::string label;
  // Runs the contender once at `point` (a value of the sweep; "" when the
  // benchmark does not sweep).
  std::function<absl::StatusOr<RunMeasurement>(const std::string& point)> run;
};

struct BenchmarkDescription {
  std::string name = "train";  // the report's "benchmark"
  Figure figure;
  nlohmann::json facts;  // what the report's JSON starts from
  // The swept parameter ("" = one point) and its values, with each value's
  // number for a plot (`numeric`; null: 0).
  std::string sweep_parameter;
  std::vector<std::string> points;
  std::function<double(const std::string& point)> numeric;
  std::vector<ContenderDescription> contenders;
  int repeat = 3;
  // Before anything is timed: checks that the contenders compute the same
  // (an error stops the benchmark), and returns what it compared, kept in
  // the facts as "same_computation". Null: nothing to check.
  std::function<absl::StatusOr<nlohmann::json>()> check;
  // Each point's table of medians, printed once its runs are done; false
  // for a benchmark that prints tables of its own.
  bool tables = true;
  // After each point's runs (and table): what the benchmark derives from
  // the point (ratios, the best of several values), printed by it; an error
  // stops the benchmark.
  std::function<absl::Status(const SweepPoint& point)> after_point;
};

// The report of every contender's runs at every point; the first run that
// fails stops the benchmark with its error.
absl::StatusOr<BenchReport> RunBenchmark(const BenchmarkDescription& description);

// The report as JSON at `json_path` (with `extra`'s fields added) and as
// CSV at `csv_path`; "" = not written.
absl::Status WriteReport(const BenchReport& report, const nlohmann::json& extra,
                         const std::string& json_path, const std::string& csv_path);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_RUNNER_H_
