// TrainReport: what `strata_bench train` measured, and its renderings as a
// text table, JSON and CSV. Pure functions of the numbers, so the writers
// are tested on their own.
#ifndef STRATA_TOOLS_BENCH_TRAIN_REPORT_H_
#define STRATA_TOOLS_BENCH_TRAIN_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata::bench {

struct ContenderResult {
  std::string label;                   // "strata ps", "pytorch ddp"
  std::vector<double> images_per_sec;  // one per repetition, in run order
  double bytes_per_iteration = 0;      // whole cluster; 0 when not measured
  // A worker's iteration in seconds: "compute", "communication", "waiting"
  // (RunSummary::seconds_per_iteration); empty when not measured.
  std::map<std::string, double> seconds_per_iteration;

  double median() const;
};

// One setting of the swept parameter (or the only run, when not sweeping).
struct SweepPoint {
  std::string value;   // as given: "1gbit", "0.2ms"; "" when not sweeping
  double numeric = 0;  // for plotting: bits/s (bandwidth) or ms (latency)
  std::vector<ContenderResult> contenders;
};

struct TrainReport {
  nlohmann::json facts;         // config, batch, threads, steps, cluster shape, machine
  std::string sweep_parameter;  // "bandwidth", "latency", or "" (no sweep)
  std::vector<SweepPoint> points;
};

// Median, min, max, MB per iteration, the breakdown and the ratio of each
// contender's median to the first contender's, one row per contender.
std::string FormatPointTable(const SweepPoint& point);
nlohmann::json ReportToJson(const TrainReport& report);
// Header, then one row per (point, contender):
// sweep,value,contender,median_images_per_sec,min,max,runs,ratio_to_first,
// mb_per_iteration,compute_s,communication_s,waiting_s
std::string ReportToCsv(const TrainReport& report);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAIN_REPORT_H_
