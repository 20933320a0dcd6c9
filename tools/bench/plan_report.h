// `strata_bench plan`: calibrates the model's layers on this machine, then
// prints the analytic traffic and predicted iteration time of ps, stanza and
// DDP for a config, cluster shape and bandwidth, the FC-worker count it
// recommends, and the predicted speed-up of stanza over ps and DDP as the
// cluster grows from 4 to 1024 conv workers (the per-worker batch fixed).
#ifndef STRATA_TOOLS_BENCH_PLAN_REPORT_H_
#define STRATA_TOOLS_BENCH_PLAN_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/traffic_plan.h"

namespace strata::bench {

struct PlanOptions {
  std::string config;
  ClusterShape shape;  // global_batch <= 0: the config's; threads also calibrate
  std::vector<std::string> bandwidths = {"1gbit"};
  double gflops = 0;     // > 0: FLOPs at this rate per process instead of calibrating
  std::string plot;      // PNG of the predicted speed-ups against N, when set
  std::string json_out;  // the report, when set
};

absl::Status RunPlan(const PlanOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_PLAN_REPORT_H_
