// BenchReport: what a benchmark of strata_bench measured (every contender's
// runs at every point of its sweep), and its renderings as a text table,
// JSON and CSV. Pure functions of the numbers, so the writers are tested on
// their own. The benchmark runner (runner.h) fills it.
#ifndef STRATA_TOOLS_BENCH_HARNESS_REPORT_H_
#define STRATA_TOOLS_BENCH_HARNESS_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::bench {

// The figure a benchmark compares its contenders by.
struct Figure {
  std::string key = "images_per_sec";  // JSON and CSV: median_<key>
  std::string column = "img/s";        // the table's: "median img/s"
  std::string unit = "images/s";       // after each run's figure
  int decimals = 0;                    // in the table and CSV
};

struct ContenderResult {
  std::string label;               // "strata ps", "pytorch ddp"
  std::vector<double> runs;        // the figure, one per repetition, in run order
  double bytes_per_iteration = 0;  // whole cluster; 0 when not measured
  // A worker's iteration in seconds: "compute", "communication", "waiting"
  // (RunSummary::seconds_per_iteration), the mean over the runs; empty
  // when not measured.
  std::map<std::string, double> seconds_per_iteration;

  double median() const;
};

// One value of the swept parameter (or the only point, when not sweeping).
struct SweepPoint {
  std::string value;   // as given: "1gbit", "0.2ms"; "" when not sweeping
  double numeric = 0;  // for plotting: bits/s (bandwidth) or ms (latency)
  std::vector<ContenderResult> contenders;
};

struct BenchReport {
  std::string benchmark = "train";  // the JSON's "benchmark"
  Figure figure;
  nlohmann::json facts;         // config, batch, threads, steps, cluster shape, machine
  std::string sweep_parameter;  // "bandwidth", "latency", or "" (no sweep)
  std::vector<SweepPoint> points;
};

// Median, min, max, MB per iteration and the breakdown (when a contender
// measured them) and the ratio of each contender's median to the first
// contender's, one row per contender.
std::string FormatPointTable(const SweepPoint& point, const Figure& figure = {});
nlohmann::json ReportToJson(const BenchReport& report);
// Header, then one row per (point, contender):
// sweep,value,contender,median_<figure>,min,max,runs,ratio_to_first,
// mb_per_iteration,compute_s,communication_s,waiting_s
std::string ReportToCsv(const BenchReport& report);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_REPORT_H_
