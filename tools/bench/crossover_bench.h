// `strata_bench crossover`: several jobs on one local cluster, under each
// sharing policy (scheduler/crossover.h), against the bound their own
// iterations set. Every round runs each job alone, then the jobs together
// under every policy, so machine drift falls on all of them alike.
//
// From a job's alone runs come its compute time c (the device busy, input
// loading included) and its communication time m per iteration. Two jobs
// that share one device and one link can at best overlap one's compute
// with the other's communication, so a pair of iterations takes at least
// max(c_A + c_B, m_A + m_B), against c_A + m_A + c_B + m_B taken in turns;
// the report gives each policy's aggregate images/s (every job's images
// after its first iteration, over the time from the first of them to the
// last job's end, read from conv worker 0's iteration records) as a
// fraction of that bound, and the ratios crossover/exclusive and
// crossover/naive. For two jobs it also gives, under exclusive and
// crossover, each job's
// share of the device time they contended for (held while the other
// waited for it), from the same records: a job waits for the device only
// while the other holds it, so a job's share is the other's waits for the
// device over both jobs' (under crossover with --weights, the shares to
// compare with the weights). A PNG timeline of the last round shows, per job, when
// it computed, waited for the device and waited for its peers. A sweep
// runs all that at each link rate and can draw every policy's throughput
// and the ideal against it.
#ifndef STRATA_TOOLS_BENCH_CROSSOVER_BENCH_H_
#define STRATA_TOOLS_BENCH_CROSSOVER_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/launch/launch_spec.h"

namespace strata::bench {

struct CrossoverBenchOptions {
  std::vector<std::string> jobs;  // job configs; two or more
  std::vector<std::string> policies = {"exclusive", "naive", "crossover"};
  // The cluster every run starts: its mode (ps or stanza), layout and
  // emulated link; each run adds its jobs, steps and outputs.
  LaunchSpec cluster;
  int steps = 100;      // per job and run
  int repeat = 5;       // rounds
  int threads = 2;      // the worker processes' cores, shared by the jobs
  int batch_size = 0;   // every job's global batch; 0 = each config's
  std::string weights;  // --weights of every run together ("1,3"; "" = equal)
  // A sweep over link rates ("100mbit", "1gbit"), each a point as above;
  // empty = the one point of `cluster.bandwidth`.
  std::vector<std::string> bandwidths;
  std::string json_out;      // "" = none
  std::string timeline_out;  // PNG; "" = none (with plot_out: next to it, NAME.timeline.png)
  std::string plot_out;      // PNG of throughput against the sweep; needs `bandwidths`
};

absl::Status RunCrossoverBench(const CrossoverBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_CROSSOVER_BENCH_H_
