// The runs of `strata_bench crossover`: each job alone, and every job
// together under a policy, each one strata_launch run on the options'
// cluster, read back from the launcher's summaries and iteration records.
#ifndef STRATA_TOOLS_BENCH_CROSSOVER_CONTENDERS_H_
#define STRATA_TOOLS_BENCH_CROSSOVER_CONTENDERS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/bench/crossover_bench.h"

namespace strata::bench {

// What one job's alone run measured, per iteration.
struct AloneRun {
  double images_per_sec = 0;
  double batch = 0;          // global batch
  double compute = 0;        // the device busy (input loading included)
  double communication = 0;  // waits on peers
};

// What a run of every job together measured.
struct TogetherRun {
  double images_per_sec = 0;   // AggregateRate
  std::vector<double> shares;  // ContestedShares
};

class CrossoverRunner {
 public:
  // Runs in `scratch` (launch logs, summaries).
  CrossoverRunner(const CrossoverBenchOptions& o, std::string scratch)
      : o_(o), scratch_(std::move(scratch)) {}

  // Job `job` alone, each host's link at `link` ("" = loopback).
  absl::StatusOr<AloneRun> RunAlone(size_t job, const std::string& link);

  // Every job together under `policy`, each process writing its iteration
  // records into `records_dir`.
  absl::StatusOr<TogetherRun> RunTogether(const std::string& policy, const std::string& link,
                                          const std::string& records_dir);

 private:
  std::string Path(const std::string& what);
  // What every run of the bench asks the launcher for.
  LaunchSpec Common(const std::string& link) const;
  absl::Status Launch(const LaunchSpec& launch, const std::string& label);

  const CrossoverBenchOptions& o_;
  const std::string scratch_;
  std::string log_;
  int runs_ = 0;
};

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_CROSSOVER_CONTENDERS_H_
