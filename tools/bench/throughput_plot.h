// A PNG of training throughput against the swept setting (link bandwidth
// or latency), one line per contender, drawn by gnuplot (gnuplot-nox).
#ifndef STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_
#define STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_

#include <string>

#include "absl/status/status.h"
#include "tools/bench/train_report.h"

namespace strata::bench {

// `s` as a gnuplot single-quoted string (a quote inside is doubled).
std::string GnuplotString(const std::string& s);

// Runs gnuplot on `script`, removes the scratch directory `dir` (which holds
// the script and its data), and checks that a non-empty `png_path` came
// out; NotFound naming the package when gnuplot is not installed.
absl::Status RunGnuplotAndClean(const std::string& script, const std::string& dir,
                                const std::string& png_path);

// Needs a sweep (report.sweep_parameter set, at least one point). Fails
// with NotFound when gnuplot is not installed, naming the package.
absl::Status WriteThroughputPlot(const TrainReport& report, const std::string& png_path);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_THROUGHPUT_PLOT_H_
