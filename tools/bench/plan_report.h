// `strata_bench plan`: prints the analytic traffic and predicted iteration
// time of ps and stanza for a config, cluster shape and bandwidth, and the
// FC-worker count it recommends.
#ifndef STRATA_TOOLS_BENCH_PLAN_REPORT_H_
#define STRATA_TOOLS_BENCH_PLAN_REPORT_H_

#include <string>

#include "absl/status/status.h"
#include "tools/bench/traffic_plan.h"

namespace strata::bench {

struct PlanOptions {
  std::string config;
  ClusterShape shape;  // global_batch <= 0: the config's
  std::string bandwidth = "1gbit";
  double gflops = 0;  // 0: measured
};

absl::Status RunPlan(const PlanOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_PLAN_REPORT_H_
