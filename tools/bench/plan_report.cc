#include "tools/bench/plan_report.h"

#include <cstdio>

#include "core/status.h"
#include "tools/bench/machine_limits.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {

absl::Status RunPlan(const PlanOptions& o) {
  if (o.config.empty()) return absl::InvalidArgumentError("plan: --config is required");
  STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(o.config));
  STRATA_ASSIGN_OR_RETURN(double bandwidth, ParseBandwidth(o.bandwidth));
  ClusterShape shape = o.shape;
  if (shape.global_batch <= 0) shape.global_batch = config.training.batch_size;
  // Training kernels reach about half the SGEMM rate (see strata_bench train).
  const double gflops = o.gflops > 0 ? o.gflops : 0.5 * MeasureSgemmGflops(1024, 1);
  STRATA_ASSIGN_OR_RETURN(TrafficPlan plan, PlanTraffic(config, shape, bandwidth, gflops));
  std::printf(
      "strata_bench plan: %s, %d conv workers, %d FC workers, %d servers, global batch %lld, "
      "%s links, %.1f GFLOP/s per process\n",
      o.config.c_str(), shape.conv_workers, shape.fc_workers, shape.servers,
      static_cast<long long>(shape.global_batch), o.bandwidth.c_str(), gflops);
  std::printf(
      "parameters: %lld (trunk %lld, head %lld = %.1f%%); boundary activations %lld per sample\n\n",
      static_cast<long long>(plan.parameters), static_cast<long long>(plan.trunk_parameters),
      static_cast<long long>(plan.head_parameters),
      100.0 * static_cast<double>(plan.head_parameters) / static_cast<double>(plan.parameters),
      static_cast<long long>(plan.boundary_elements));
  std::printf("%-8s %16s %14s %12s %12s %12s\n", "mode", "bytes/iteration", "busiest link",
              "compute s", "iteration s", "images/s");
  for (const auto& [name, m] : {std::pair<const char*, const ModePlan&>{"ps", plan.ps},
                                std::pair<const char*, const ModePlan&>{"stanza", plan.stanza}}) {
    std::printf("%-8s %13.3f MB %14s %12.4f %12.4f %12.0f\n", name, m.bytes_per_iteration / 1e6,
                m.busiest_link.c_str(), m.compute_seconds, m.seconds_per_iteration,
                m.images_per_sec);
  }
  std::printf("stanza moves %.1fx fewer bytes; predicted speed-up %.2fx\n",
              plan.ps.bytes_per_iteration / plan.stanza.bytes_per_iteration,
              plan.ps.seconds_per_iteration / plan.stanza.seconds_per_iteration);
  // The FC-worker count with the shortest predicted iteration (divisors of N).
  int best = 1;
  double best_time = 1e300;
  for (int f = 1; f <= shape.conv_workers; ++f) {
    if (shape.conv_workers % f != 0) continue;
    ClusterShape trial = shape;
    trial.fc_workers = f;
    STRATA_ASSIGN_OR_RETURN(TrafficPlan p, PlanTraffic(config, trial, bandwidth, gflops));
    std::printf("  with %d FC worker(s): %.4f s per iteration (busiest link: %s)\n", f,
                p.stanza.seconds_per_iteration, p.stanza.busiest_link.c_str());
    if (p.stanza.seconds_per_iteration < best_time * 0.98) {
      best = f;
      best_time = p.stanza.seconds_per_iteration;
    }
  }
  std::printf("recommended FC workers at %s: %d\n", o.bandwidth.c_str(), best);
  return absl::OkStatus();
}

}  // namespace strata::bench
