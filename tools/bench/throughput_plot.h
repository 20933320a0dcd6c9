// A PNG of a benchmark's figure against the swept setting (link bandwidth
// or latency), one line per contender (harness/plot.h draws it).
#ifndef STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_
#define STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_

#include <string>

#include "absl/status/status.h"
#include "tools/bench/harness/report.h"

namespace strata::bench {

// Needs a sweep (report.sweep_parameter set, at least one point). Fails
// with NotFound when gnuplot is not installed, naming the package.
absl::Status WriteThroughputPlot(const BenchReport& report, const std::string& png_path);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_
