// TrafficPlan: the analytic bytes per iteration and predicted iteration time
// of `ps`, `stanza` and data-parallel all-reduce (DDP) for a model, cluster
// shape and link bandwidth.
//
// Bytes per iteration (float32, headers ignored), with N conv workers, F FC
// workers, S servers, per-worker batch b, P = all parameters, T = trunk
// parameters, H = head parameters, A = boundary activation elements per
// sample:
//   ps:     2·N·P·4                       (every worker pushes and pulls P)
//   stanza: 2·N·T·4                       (trunk push + pull)
//         + N·b·(A + 1)·4 + N·b·A·4       (activations + labels, gradients)
//         + [F > 1] 2·F·H·4               (head reduction through the servers)
//   ddp:    2·N·(N−1)/N·P·4 each way      (ring all-reduce: reduce-scatter,
//                                          then all-gather)
// With colocated servers a conv host sends and receives, each way, its
// worker's pushes and pulls to the other N−1 servers and its server's share
// of the other workers': 2·(N−1)/N·P in ps, 2·(N−1)/N·T (plus its
// activations) in stanza.
// Time per iteration = compute + the busiest link's bytes / bandwidth (links
// are full duplex; each host has one). Compute is the per-sample cost of the
// trunk and the head (ComputeCosts: calibrated on this machine, or FLOPs at
// a rate) times the samples each process computes; in stanza the trunk and
// the head run one after the other. Compute and communication are not
// assumed to overlap.
#ifndef STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_
#define STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/model/job_config.h"
#include "core/model/model.h"

namespace strata::bench {

struct ClusterShape {
  int servers = 1;
  int conv_workers = 2;
  int fc_workers = 1;
  int64_t global_batch = 64;
  // One server per conv worker, on that worker's host (as BytePS and
  // ps-lite deployments colocate them): `servers` is then N, and a host's
  // link carries its worker's traffic and its server's.
  bool colocated_servers = false;
};

// What the plan needs of a model (built once; planning is arithmetic).
struct ModelFacts {
  int64_t parameters = 0, trunk_parameters = 0, head_parameters = 0;
  int64_t boundary_elements = 0;  // per sample, at the split
  // FLOPs of one sample's training step (forward, input and weight
  // gradients) in the trunk and in the head.
  double trunk_flops = 0, head_flops = 0;
};
ModelFacts FactsOf(Model& model);
// The same of `config`'s model, built for the purpose.
absl::StatusOr<ModelFacts> FactsOf(const JobConfig& config);

// Seconds of one sample's training step (forward and backward) in the trunk
// and in the head, on one process.
struct ComputeCosts {
  double trunk_seconds = 0, head_seconds = 0;
  std::string source;  // how they were found, for the report
};
// The FLOPs at `gflops` per process.
ComputeCosts CostsFromFlops(const ModelFacts& facts, double gflops);

struct ModePlan {
  double bytes_per_iteration = 0;
  double busiest_link_bytes = 0;  // one direction of the busiest host link
  std::string busiest_link;       // "server", "fc worker", "conv worker"
  double compute_seconds = 0;
  double seconds_per_iteration = 0;
  double images_per_sec = 0;
};

struct TrafficPlan {
  ModelFacts facts;
  ModePlan ps;
  ModePlan stanza;
  ModePlan ddp;
};

// `bandwidth_bytes_per_sec` <= 0 means an infinitely fast network.
absl::StatusOr<TrafficPlan> PlanTraffic(const ModelFacts& facts, const ClusterShape& shape,
                                        double bandwidth_bytes_per_sec, const ComputeCosts& costs);

// The FC-worker count (a divisor of the conv workers) with the shortest
// predicted stanza iteration; a count must beat the smaller ones by 2%.
absl::StatusOr<int> RecommendedFcWorkers(const ModelFacts& facts, const ClusterShape& shape,
                                         double bandwidth_bytes_per_sec, const ComputeCosts& costs);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_
