#include "tools/bench/traffic_plan.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/status.h"

namespace strata::bench {

absl::StatusOr<TrafficPlan> PlanTraffic(const JobConfig& config, const ClusterShape& shape,
                                        double bandwidth, double gflops) {
  if (shape.conv_workers < 1 || shape.fc_workers < 1 || shape.servers < 1 ||
      shape.global_batch % shape.conv_workers != 0) {
    return absl::InvalidArgumentError(
        "plan: needs >= 1 of each role and a global batch divisible by the conv workers");
  }
  STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, 1));
  const int split = model->split_index();
  TrafficPlan plan;
  for (Parameter* p : model->parameters()) plan.parameters += p->value.numel();
  for (Parameter* p : model->parameters(0, split)) plan.trunk_parameters += p->value.numel();
  plan.head_parameters = plan.parameters - plan.trunk_parameters;
  plan.boundary_elements = model->boundary_shape().numel();

  const double n = shape.conv_workers, f = shape.fc_workers, s = shape.servers;
  const double b = static_cast<double>(shape.global_batch) / n;
  const double p = static_cast<double>(plan.parameters) * 4;
  const double t = static_cast<double>(plan.trunk_parameters) * 4;
  const double h = static_cast<double>(plan.head_parameters) * 4;
  const double a = static_cast<double>(plan.boundary_elements) * 4;
  auto link_seconds = [&](double bytes) { return bandwidth > 0 ? bytes / bandwidth : 0.0; };
  auto seconds_for = [&](double flops) { return gflops > 0 ? flops / (gflops * 1e9) : 0.0; };

  // FLOPs of one sample's training step, trunk and head.
  double trunk_flops = 0, head_flops = 0;
  for (int i = 0; i < model->num_layers(); ++i) {
    const double fl =
        static_cast<double>(model->layer(i).ForwardFlopsPerSample()) * (i == 0 ? 2 : 3);
    (i < split ? trunk_flops : head_flops) += fl;
  }

  ModePlan& ps = plan.ps;
  ps.bytes_per_iteration = 2 * n * p;
  const double ps_server = n * p / s;  // each direction
  const double ps_worker = p;
  ps.busiest_link_bytes = std::max(ps_server, ps_worker);
  ps.busiest_link = ps_server >= ps_worker ? "server" : "conv worker";
  ps.compute_seconds = seconds_for(b * (trunk_flops + head_flops));

  ModePlan& st = plan.stanza;
  const double shared_head = shape.fc_workers > 1 ? 1.0 : 0.0;
  st.bytes_per_iteration = 2 * n * t + n * b * (a + 4) + n * b * a + shared_head * 2 * f * h;
  const double st_server = (n * t + shared_head * f * h) / s;
  const double st_fc = (n / f) * b * (a + 4) + shared_head * h;
  const double st_conv = t + b * (a + 4);
  st.busiest_link_bytes = std::max({st_server, st_fc, st_conv});
  st.busiest_link = st.busiest_link_bytes == st_server ? "server"
                    : st.busiest_link_bytes == st_fc   ? "fc worker"
                                                       : "conv worker";
  // The conv trunk and the FC head run one after the other each iteration.
  st.compute_seconds = seconds_for(b * trunk_flops) + seconds_for((n / f) * b * head_flops);

  for (ModePlan* m : {&ps, &st}) {
    m->seconds_per_iteration = m->compute_seconds + link_seconds(m->busiest_link_bytes);
    m->images_per_sec = m->seconds_per_iteration > 0
                            ? static_cast<double>(shape.global_batch) / m->seconds_per_iteration
                            : 0;
  }
  return plan;
}

}  // namespace strata::bench
