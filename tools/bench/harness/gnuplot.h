// Drawing a PNG with gnuplot (gnuplot-nox): what every plot of strata_bench
// shares.
#ifndef STRATA_TOOLS_BENCH_HARNESS_GNUPLOT_H_
#define STRATA_TOOLS_BENCH_HARNESS_GNUPLOT_H_

#include <string>

#include "absl/status/status.h"

namespace strata::bench {

// `s` as a gnuplot single-quoted string (a quote inside is doubled).
std::string GnuplotString(const std::string& s);

// Runs gnuplot on `script`, removes the scratch directory `dir` (which holds
// the script and its data), and checks that a non-empty `png_path` came
// out; NotFound naming the package when gnuplot is not installed.
absl::Status RunGnuplotAndClean(const std::string& script, const std::string& dir,
                                const std::string& png_path);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_GNUPLOT_H_
