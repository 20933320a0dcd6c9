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
// Time per iteration: the phases of a step one after the other:
//   ps, ddp: every worker's forward, then its backward with the exchange;
//   stanza:  the trunk's forward, the activations to the FC workers, the
//            head's forward and backward on the FC worker's whole batch
//            (N·b/F samples), the activation gradients back, then the
//            trunk's backward with its exchange (and the head's, F > 1).
// An exchange overlaps backward: a layer's parameters go out once backward
// has passed it (as ParameterSync and DDP's buckets send them), layer by
// layer from the last, each taking its share of the busiest link's bytes
// (one direction) over the bandwidth; backward-with-exchange ends when both
// have. Every chunk's pull request follows its push, so a server sends back
// one chunk while the next arrives and the two directions of a link
// overlap. A link carries kTcpPayloadShare of its
// rate as payload. Compute is the per-sample cost (ComputeCosts: calibrated
// on this machine, or FLOPs at a rate) times the samples a process computes;
// where the cluster's processes share `shared_cores` cores (an emulated
// cluster on one machine), k processes computing at once with t threads
// each take max(1, k·t / shared_cores) times as long.
#ifndef STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_
#define STRATA_TOOLS_BENCH_TRAFFIC_PLAN_H_

#include <string>
#include <vector>

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
  // Compute threads per process.
  int threads = 1;
  // 0: every process has cores of its own (a real cluster); otherwise all
  // processes share this many cores (the emulated cluster on one machine).
  int shared_cores = 0;
};

// The share of a TCP/IPv4 link's rate that carries payload: 1448 bytes of
// every 1538 on the wire for full 1500-byte frames with timestamps; a
// stream over the emulated links carries 95% (strata_bench link).
inline constexpr double kTcpPayloadShare = 0.95;

// What the plan needs of a model (built once; planning is arithmetic).
struct ModelFacts {
  int64_t parameters = 0, trunk_parameters = 0, head_parameters = 0;
  int64_t boundary_elements = 0;  // per sample, at the split
  // FLOPs of one sample's training step (forward, input and weight
  // gradients) in the trunk and in the head.
  double trunk_flops = 0, head_flops = 0;
  // Per top-level layer: its parameters and its FLOPs of one sample's
  // forward and backward.
  std::vector<int64_t> layer_parameters;
  std::vector<double> layer_forward_flops, layer_backward_flops;
  int split = 0;  // the first head layer
};
ModelFacts FactsOf(Model& model);
// The same of `config`'s model, built for the purpose.
absl::StatusOr<ModelFacts> FactsOf(const JobConfig& config);

// Seconds of one sample's training step (forward and backward) in the trunk
// and in the head, on one process, at a conv worker's batch; and of the
// head at a stanza FC worker's batch (the conv workers' samples together;
// 0: as at a conv worker's).
struct ComputeCosts {
  double trunk_seconds = 0, head_seconds = 0;
  double fc_head_seconds = 0;
  // Per top-level layer at a conv worker's batch, per sample (empty: the
  // exchange starts after backward).
  std::vector<double> layer_forward_seconds, layer_backward_seconds;
  // The head's per-sample seconds at a stanza FC worker's batch.
  double fc_head() const { return fc_head_seconds > 0 ? fc_head_seconds : head_seconds; }
  std::string source;  // how they were found, for the report
};
// The FLOPs at `gflops` per process.
ComputeCosts CostsFromFlops(const ModelFacts& facts, double gflops);

struct ModePlan {
  double bytes_per_iteration = 0;
  double busiest_link_bytes = 0;  // one direction of the busiest host link
  std::string busiest_link;       // "server", "fc worker", "conv worker"
  double compute_seconds = 0;
  double communication_seconds = 0;
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
