#include "tools/bench/crossover_bench.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status.h"
#include "core/util/scratch_directory.h"
#include "flags/cluster_flags.h"
#include "scheduler/crossover.h"
#include "tools/bench/crossover_contenders.h"
#include "tools/bench/crossover_summary.h"
#include "tools/bench/harness/runner.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {

absl::Status RunCrossoverBench(const CrossoverBenchOptions& options) {
  const CrossoverBenchOptions& o = options;
  if (o.jobs.size() < 2) {
    return absl::InvalidArgumentError("--jobs: name two or more job configs (a.json,b.json)");
  }
  if (o.repeat < 1 || o.steps < 2) {
    return absl::InvalidArgumentError("--repeat must be at least 1 and --steps at least 2");
  }
  for (const std::string& policy : o.policies) {
    if (policy != "exclusive" && policy != "naive" && policy != "crossover") {
      return absl::InvalidArgumentError(
          absl::StrCat("--policies ", policy, ": use exclusive, naive or crossover"));
    }
  }
  STRATA_RETURN_IF_ERROR(ParseDeviceWeights(o.weights, o.jobs.size()).status());
  for (const std::string& b : o.bandwidths) {
    STRATA_RETURN_IF_ERROR_CTX(ParseBandwidth(b).status(), "--sweep bandwidth=");
  }
  if (!o.plot_out.empty() && o.bandwidths.empty()) {
    return absl::InvalidArgumentError(
        "--plot needs --sweep bandwidth=... (throughput against the link rate)");
  }
  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch_directory,
                          ScratchDirectory::Make("strata_crossover_bench"));
  const std::string& scratch = scratch_directory.path();
  std::printf(
      "crossover: %zu jobs (%s), %s mode, %d server(s), %d conv worker(s), %d steps, "
      "%d rounds, %s\n",
      o.jobs.size(), absl::StrJoin(o.jobs, ", ").c_str(), o.cluster.mode.c_str(), o.cluster.servers,
      o.cluster.conv_workers, o.steps, o.repeat,
      !o.bandwidths.empty()         ? "links swept"
      : o.cluster.bandwidth.empty() ? "loopback"
                                    : ("links of " + o.cluster.bandwidth).c_str());

  // Each round runs every job alone, then the jobs together under every
  // policy; what each run measured goes to its point's PointRuns.
  CrossoverRunner runner(o, scratch);
  std::map<std::string, PointRuns> runs;  // by the point's value
  const auto link_of = [&o](const std::string& value) {
    return value.empty() ? o.cluster.bandwidth : value;
  };
  BenchmarkDescription d;
  d.name = "crossover";
  d.sweep_parameter = o.bandwidths.empty() ? "" : "bandwidth";
  d.points = o.bandwidths;
  d.repeat = o.repeat;
  d.tables = false;  // each point's own table below
  for (size_t job = 0; job < o.jobs.size(); ++job) {
    d.contenders.push_back(
        {absl::StrCat("job ", job + 1, " alone"),
         [&, job](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           STRATA_ASSIGN_OR_RETURN(const AloneRun r, runner.RunAlone(job, link_of(value)));
           PointRuns& at = runs[value];
           at.alone.resize(o.jobs.size());
           at.alone[job].push_back(r);
           return RunMeasurement{
               r.images_per_sec, 0, {{"compute", r.compute}, {"communication", r.communication}}};
         }});
  }
  for (const std::string& policy : o.policies) {
    d.contenders.push_back(
        {policy, [&, policy](const std::string& value) -> absl::StatusOr<RunMeasurement> {
           PointRuns& at = runs[value];
           std::vector<double>& aggregate = at.aggregate[policy];
           at.records[policy] = absl::StrCat(scratch, "/records_", policy, "_", aggregate.size(),
                                             "_", link_of(value));
           STRATA_ASSIGN_OR_RETURN(const TogetherRun run,
                                   runner.RunTogether(policy, link_of(value), at.records[policy]));
           aggregate.push_back(run.images_per_sec);
           if (!run.shares.empty()) {
             std::vector<std::vector<double>>& shares = at.shares[policy];
             shares.resize(run.shares.size());
             for (size_t job = 0; job < run.shares.size(); ++job) {
               shares[job].push_back(run.shares[job]);
             }
           }
           return RunMeasurement{run.images_per_sec, 0, {}};
         }});
  }
  std::vector<PointResult> points;
  d.after_point = [&](const SweepPoint& p) -> absl::Status {
    if (!p.value.empty()) std::printf("\nlinks of %s:", p.value.c_str());
    CrossoverBenchOptions at = o;
    at.cluster.bandwidth = link_of(p.value);
    STRATA_ASSIGN_OR_RETURN(PointResult point, Summarise(at, runs[p.value]));
    points.push_back(std::move(point));
    return absl::OkStatus();
  };
  STRATA_RETURN_IF_ERROR(RunBenchmark(d).status());
  return WriteOutputs(o, points);
}

}  // namespace strata::bench
