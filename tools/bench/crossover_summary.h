// The figures of `strata_bench crossover` (crossover_bench.h says how they
// are derived): a point's summary from its runs, printed, and what the
// options ask to be written (the sweep's table, the timeline, the
// throughput plot, the JSON).
#ifndef STRATA_TOOLS_BENCH_CROSSOVER_SUMMARY_H_
#define STRATA_TOOLS_BENCH_CROSSOVER_SUMMARY_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "tools/bench/crossover_bench.h"
#include "tools/bench/crossover_contenders.h"

namespace strata::bench {

// What every run at one point measured: each job alone, then every
// policy, round after round.
struct PointRuns {
  std::vector<std::vector<AloneRun>> alone;              // per job, one per round
  std::map<std::string, std::vector<double>> aggregate;  // by policy, one per round
  // By policy, per job, one per round (two jobs only; ContestedShares).
  std::map<std::string, std::vector<std::vector<double>>> shares;
  std::map<std::string, std::string> records;  // by policy: the last round's
};

// A point's figures: the bound from the jobs' alone runs, and each policy's
// throughput against it; `report` is the point's JSON.
struct PointResult {
  double compute = 0, communication = 0;  // per iteration, summed over the jobs
  double ideal = 0, in_turns = 0;         // images/s
  std::map<std::string, std::vector<double>> aggregate;
  std::map<std::string, std::string> records;
  nlohmann::json report;
};

// The figures of the point whose link is `o.cluster.bandwidth`, printed.
absl::StatusOr<PointResult> Summarise(const CrossoverBenchOptions& o, const PointRuns& runs);

// With a sweep, every point's medians in one table; then the timeline,
// the throughput plot and the JSON the options ask for.
absl::Status WriteOutputs(const CrossoverBenchOptions& o, const std::vector<PointResult>& points);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_CROSSOVER_SUMMARY_H_
