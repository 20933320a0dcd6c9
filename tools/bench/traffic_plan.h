// TrafficPlan: the analytic bytes per iteration and predicted iteration time
// of `ps` and `stanza` for a model, cluster shape and link bandwidth.
//
// Bytes per iteration (float32, headers ignored), with N conv workers, F FC
// workers, S servers, per-worker batch b, P = all parameters, T = trunk
// parameters, H = head parameters, A = boundary activation elements per
// sample:
//   ps:     2·N·P·4                       (every worker pushes and pulls P)
//   stanza: 2·N·T·4                       (trunk push + pull)
//         + N·b·(A + 1)·4 + N·b·A·4       (activations + labels, gradients)
//         + [F > 1] 2·F·H·4               (head reduction through the servers)
// Time per iteration = compute (per-sample training FLOPs at `gflops`) +
// the busiest link's bytes / bandwidth (links are full duplex; each host
// has one). Compute and communication are not assumed to overlap.
#ifndef STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_
#define STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/model/job_config.h"

namespace strata::bench {

struct ClusterShape {
  int servers = 1;
  int conv_workers = 2;
  int fc_workers = 1;
  int64_t global_batch = 64;
};

struct ModePlan {
  double bytes_per_iteration = 0;
  double busiest_link_bytes = 0;  // one direction of the busiest host link
  std::string busiest_link;       // "server", "fc worker", "conv worker"
  double compute_seconds = 0;
  double seconds_per_iteration = 0;
  double images_per_sec = 0;
};

struct TrafficPlan {
  int64_t parameters = 0, trunk_parameters = 0, head_parameters = 0;
  int64_t boundary_elements = 0;
  ModePlan ps;
  ModePlan stanza;
};

// `bandwidth_bytes_per_sec` <= 0 means an infinitely fast network.
absl::StatusOr<TrafficPlan> PlanTraffic(const JobConfig& config, const ClusterShape& shape,
                                        double bandwidth_bytes_per_sec, double gflops);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_
