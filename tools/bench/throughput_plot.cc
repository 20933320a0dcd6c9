#include "tools/bench/throughput_plot.h"

#include "tools/bench/harness/plot.h"

namespace strata::bench {

absl::Status WriteThroughputPlot(const BenchReport& report, const std::string& png_path) {
  if (report.sweep_parameter.empty() || report.points.empty()) {
    return absl::InvalidArgumentError("--plot needs a --sweep (throughput against its values)");
  }
  return DrawReport(ReportToJson(report), png_path, "points");
}

}  // namespace strata::bench
