#include "tools/bench/traffic_plan.h"

#include <algorithm>

#include "core/model/model.h"
#include "core/status.h"

namespace strata::bench {

ModelFacts FactsOf(Model& model) {
  const int split = model.split_index();
  ModelFacts f;
  for (Parameter* p : model.parameters()) f.parameters += p->value.numel();
  for (Parameter* p : model.parameters(0, split)) f.trunk_parameters += p->value.numel();
  f.head_parameters = f.parameters - f.trunk_parameters;
  f.boundary_elements = model.boundary_shape().numel();
  f.split = split;
  for (int i = 0; i < model.num_layers(); ++i) {
    int64_t parameters = 0;
    for (Parameter* p : model.parameters(i, i + 1)) parameters += p->value.numel();
    f.layer_parameters.push_back(parameters);
    // Backward: input gradient and weight gradient; the first layer needs
    // no input gradient.
    const double forward = static_cast<double>(model.layer(i).ForwardFlopsPerSample());
    const double backward = forward * (i == 0 ? 1 : 2);
    f.layer_forward_flops.push_back(forward);
    f.layer_backward_flops.push_back(backward);
    (i < split ? f.trunk_flops : f.head_flops) += forward + backward;
  }
  return f;
}

absl::StatusOr<ModelFacts> FactsOf(const JobConfig& config) {
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  return FactsOf(*model);
}

ComputeCosts CostsFromFlops(const ModelFacts& facts, double gflops) {
  ComputeCosts c;
  if (gflops > 0) {
    c.trunk_seconds = facts.trunk_flops / (gflops * 1e9);
    c.head_seconds = facts.head_flops / (gflops * 1e9);
    for (size_t i = 0; i < facts.layer_forward_flops.size(); ++i) {
      c.layer_forward_seconds.push_back(facts.layer_forward_flops[i] / (gflops * 1e9));
      c.layer_backward_seconds.push_back(facts.layer_backward_flops[i] / (gflops * 1e9));
    }
  }
  c.source = gflops > 0 ? "FLOPs at a rate" : "none (communication only)";
  return c;
}

namespace {

// Seconds from the start of backward over layers [0, end) until both it
// and the exchange of those layers' parameters are done: layer i's share of
// `link_seconds` starts once backward has passed layer i and the link is
// free. `slowdown` stretches the calibrated per-sample backward times of a
// batch of `batch`. Without per-layer times, the exchange follows backward.
double BackwardWithExchange(const ModelFacts& facts, const ComputeCosts& costs, int end,
                            double batch, double slowdown, double backward_seconds,
                            double link_seconds) {
  const bool per_layer = static_cast<int>(costs.layer_backward_seconds.size()) >= end &&
                         static_cast<int>(facts.layer_parameters.size()) >= end;
  if (!per_layer) return backward_seconds + link_seconds;
  double parameters = 0;
  for (int i = 0; i < end; ++i) parameters += static_cast<double>(facts.layer_parameters[i]);
  if (parameters == 0) return backward_seconds;  // nothing to exchange
  double passed = 0, link_free = 0;
  for (int i = end - 1; i >= 0; --i) {
    passed += costs.layer_backward_seconds[i] * batch * slowdown;
    if (facts.layer_parameters[i] == 0) continue;
    link_free = std::max(link_free, passed) +
                link_seconds * static_cast<double>(facts.layer_parameters[i]) / parameters;
  }
  return std::max(link_free, backward_seconds);
}

// The forward part of a per-sample cost over layers [begin, end) (a third
// when the per-layer times are unknown).
double ForwardShare(const ComputeCosts& costs, int begin, int end) {
  if (static_cast<int>(costs.layer_forward_seconds.size()) < end) return 1.0 / 3;
  double forward = 0, total = 0;
  for (int i = begin; i < end; ++i) {
    forward += costs.layer_forward_seconds[i];
    total += costs.layer_forward_seconds[i] + costs.layer_backward_seconds[i];
  }
  return total > 0 ? forward / total : 1.0 / 3;
}

}  // namespace

absl::StatusOr<TrafficPlan> PlanTraffic(const ModelFacts& facts, const ClusterShape& shape,
                                        double bandwidth, const ComputeCosts& costs) {
  if (shape.conv_workers < 1 || shape.fc_workers < 1 || shape.servers < 1 || shape.threads < 1 ||
      shape.shared_cores < 0 || shape.global_batch % shape.conv_workers != 0) {
    return absl::InvalidArgumentError(
        "plan: needs >= 1 of each role and thread, shared cores >= 0 and a global batch divisible "
        "by the conv workers");
  }
  TrafficPlan plan;
  plan.facts = facts;
  const bool colocated = shape.colocated_servers;
  const double n = shape.conv_workers, f = shape.fc_workers;
  const double s = colocated ? n : shape.servers;
  const double b = static_cast<double>(shape.global_batch) / n;
  const double p = static_cast<double>(facts.parameters) * 4;
  const double t = static_cast<double>(facts.trunk_parameters) * 4;
  const double h = static_cast<double>(facts.head_parameters) * 4;
  const double a = static_cast<double>(facts.boundary_elements) * 4;
  const double label = 4;
  auto link_seconds = [&](double bytes) {
    return bandwidth > 0 ? bytes / (bandwidth * kTcpPayloadShare) : 0.0;
  };
  // How much longer compute takes with `processes` computing at once.
  auto contention = [&](double processes) {
    if (shape.shared_cores == 0) return 1.0;
    return std::max(1.0, processes * shape.threads / shape.shared_cores);
  };
  const double whole_model = costs.trunk_seconds + costs.head_seconds;

  ModePlan& ps = plan.ps;
  // A colocated server's traffic with its own host's worker stays on the host.
  const double off_host = colocated ? (n - 1) / n : 1.0;
  ps.bytes_per_iteration = 2 * n * p * off_host;
  if (colocated) {
    ps.busiest_link_bytes = 2 * p * off_host;  // the worker's and the server's, each way
    ps.busiest_link = "conv worker + server";
  } else {
    const double ps_server = n * p / s;  // each direction
    const double ps_worker = p;
    ps.busiest_link_bytes = std::max(ps_server, ps_worker);
    ps.busiest_link = ps_server >= ps_worker ? "server" : "conv worker";
  }
  const int layers = static_cast<int>(facts.layer_parameters.size());
  const double whole_forward = ForwardShare(costs, 0, layers);
  // A worker's forward, then its backward with the exchange of every layer.
  auto data_parallel = [&](ModePlan& m, double exchange_seconds) {
    m.compute_seconds = b * whole_model * contention(n);
    const double forward = m.compute_seconds * whole_forward;
    m.seconds_per_iteration =
        forward + BackwardWithExchange(facts, costs, layers, b, contention(n),
                                       m.compute_seconds - forward, exchange_seconds);
    m.communication_seconds = m.seconds_per_iteration - m.compute_seconds;
  };
  data_parallel(ps, link_seconds(ps.busiest_link_bytes));

  ModePlan& st = plan.stanza;
  const double shared_head = shape.fc_workers > 1 ? 1.0 : 0.0;
  st.bytes_per_iteration =
      2 * n * t * off_host + n * b * (a + label) + n * b * a + shared_head * 2 * f * h;
  // An FC worker receives its conv workers' activations, then sends their
  // gradients back; a conv worker's own share is 1/(N/F) of that.
  const double to_fc = (n / f) * b * (a + label), from_fc = (n / f) * b * a;
  // The exchange that overlaps backward, in bytes of the busiest link's
  // busier direction.
  double exchange = 0;
  std::string exchange_link;
  if (colocated) {
    // Each conv host: its trunk to and from the other servers, its server's
    // share of the others' trunks and of the FC workers' heads.
    const double conv_host = 2 * t * off_host + shared_head * f * h / n;
    const double fc_host = shared_head * h;
    exchange = std::max(conv_host, fc_host);
    exchange_link = conv_host >= fc_host ? "conv worker + server" : "fc worker";
  } else {
    const double server = (n * t + shared_head * f * h) / s;
    const double conv = t, fc = shared_head * h;
    exchange = std::max({server, conv, fc});
    exchange_link = exchange == server ? "server" : exchange == conv ? "conv worker" : "fc worker";
  }
  st.busiest_link_bytes = std::max(exchange, to_fc);
  st.busiest_link = exchange >= to_fc ? exchange_link : "fc worker";
  const double trunk = b * costs.trunk_seconds * contention(n);
  const double trunk_forward = trunk * ForwardShare(costs, 0, facts.split);
  const double head = (n / f) * b * costs.fc_head() * contention(f);
  st.compute_seconds = trunk + head;
  st.seconds_per_iteration = trunk_forward + link_seconds(to_fc) + head + link_seconds(from_fc) +
                             BackwardWithExchange(facts, costs, facts.split, b, contention(n),
                                                  trunk - trunk_forward, link_seconds(exchange));
  st.communication_seconds = st.seconds_per_iteration - st.compute_seconds;

  ModePlan& ddp = plan.ddp;
  const double ring = 2 * (n - 1) / n * p;  // each direction, every worker
  ddp.bytes_per_iteration = n * ring;
  ddp.busiest_link_bytes = ring;
  ddp.busiest_link = "conv worker";
  data_parallel(ddp, link_seconds(ring));

  for (ModePlan* m : {&ps, &st, &ddp}) {
    m->images_per_sec = m->seconds_per_iteration > 0
                            ? static_cast<double>(shape.global_batch) / m->seconds_per_iteration
                            : 0;
  }
  return plan;
}

absl::StatusOr<int> RecommendedFcWorkers(const ModelFacts& facts, const ClusterShape& shape,
                                         double bandwidth, const ComputeCosts& costs) {
  int best = 1;
  double best_time = 1e300;
  for (int f = 1; f <= shape.conv_workers; ++f) {
    if (shape.conv_workers % f != 0) continue;
    ClusterShape trial = shape;
    trial.fc_workers = f;
    STRATA_ASSIGN_OR_RETURN(TrafficPlan p, PlanTraffic(facts, trial, bandwidth, costs));
    if (p.stanza.seconds_per_iteration < best_time * 0.98) {
      best = f;
      best_time = p.stanza.seconds_per_iteration;
    }
  }
  return best;
}

}  // namespace strata::bench
