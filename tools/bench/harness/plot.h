// Every PNG of strata_bench and strata_research is drawn by one script,
// tools/bench/plot_report.py, from a report's JSON: what it draws follows
// from the fields the report holds (the script's header lists them), so a
// benchmark over the runner gets its plot with no code of its own, and
// users redraw any saved report the same way.
#ifndef STRATA_TOOLS_BENCH_HARNESS_PLOT_H_
#define STRATA_TOOLS_BENCH_HARNESS_PLOT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace strata::bench {

// Draws `report` into `png_path`: the script's drawing `what` ("points",
// "timeline", ...; "" = the first the report holds). InvalidArgument when
// the report holds nothing to draw (the script says why), NotFound naming
// the package when gnuplot or python3 is not installed, Internal when
// gnuplot fails.
absl::Status DrawReport(const nlohmann::json& report, const std::string& png_path,
                        const std::string& what = "");

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_PLOT_H_
