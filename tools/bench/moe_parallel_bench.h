// `strata_bench moe --workers 2,4 [--bandwidth 1gbit]`: the MoE layer of
// `strata_bench moe` spread over F processes (strata_moe_member, expert
// parallelism over ZeroMQ: ipc on loopback, or tcp between emulated hosts
// with --bandwidth), the same global batch split evenly over them, timed
// under every static pipelining degree d and parallelism r. A setting's time is the
// slowest member's median forward + backward; the best (d, r) per F is
// reported beside the single-process time of the same run.
#ifndef STRATA_TOOLS_BENCH_MOE_PARALLEL_BENCH_H_
#define STRATA_TOOLS_BENCH_MOE_PARALLEL_BENCH_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "tools/bench/moe_bench.h"

namespace strata::bench {

// Runs the sweep for every F in options.workers; `scratch` holds the
// members' sockets and logs. Returns the "expert_parallel" report section.
absl::StatusOr<nlohmann::json> RunExpertParallelSweep(const MoeBenchOptions& options,
                                                      double single_seconds,
                                                      const std::string& scratch);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_MOE_PARALLEL_BENCH_H_
