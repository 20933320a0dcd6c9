#include "tools/bench/moe_bench.h"

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/util/clock.h"
#include "core/util/scratch_directory.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/harness/runner.h"
#include "tools/bench/machine_limits.h"
#include "tools/bench/moe_contenders.h"
#include "tools/bench/moe_parallel_bench.h"

namespace strata::bench {
namespace {

// Strata's layer and what it computes on: a random input and the gradient
// of a mean over its output.
struct MoeProblem {
  std::unique_ptr<moe::MoeLayer> layer;
  Tensor x, grad;
  LayerResult result;  // the layer's output and input gradient
};

absl::StatusOr<MoeProblem> MakeProblem(const MoeBenchOptions& o) {
  moe::MoeOptions mo;
  mo.experts = o.experts;
  mo.top_k = o.top_k;
  mo.hidden = o.hidden;
  mo.capacity.factor = o.capacity;
  // The peers have no auxiliary load-balancing loss: without it, every
  // contender's input gradient is the same function's.
  mo.aux_loss_weight = 0.0f;
  MoeProblem p;
  STRATA_ASSIGN_OR_RETURN(p.layer, moe::MoeLayer::Create("moe", Shape{o.dim}, mo));
  Rng rng(1);
  p.layer->InitParameters(rng);
  p.x = Tensor::Empty({o.tokens, o.dim});
  FillUniform(p.x, rng, 1.0f);
  p.grad = Tensor::Full({o.tokens, o.dim}, 1.0f / static_cast<float>(o.tokens * o.dim));
  p.result.y = p.layer->Forward(p.x, /*training=*/true).Clone();
  p.result.grad_x = p.layer->Backward(p.grad, /*need_input_grad=*/true).Clone();
  return p;
}

// Strata's layer and, with torch, the two PyTorch peers; each run one timed
// forward + backward after an untimed one. The check runs each peer once and compares what it
// computed with the layer's result.
BenchmarkDescription MoeBenchmark(const MoeBenchOptions& o, MoeProblem& p, bool torch,
                                  const std::string& inputs, const std::string& scratch) {
  BenchmarkDescription d;
  d.name = "moe";
  d.figure = {"seconds", "fwd+bwd s", "s", 3};
  d.repeat = o.repeat;
  // Each run warms up with one untimed step first, as a peer's run does.
  d.contenders.push_back({"strata", [&p](const std::string&) -> absl::StatusOr<RunMeasurement> {
                            double seconds = 0;
                            for (int step = 0; step < 2; ++step) {
                              const double start = MonotonicSeconds();
                              p.layer->Forward(p.x, /*training=*/true);
                              p.layer->Backward(p.grad, /*need_input_grad=*/true);
                              seconds = MonotonicSeconds() - start;
                            }
                            return FigureOnly(seconds);
                          }});
  if (!torch) return d;
  for (const std::string dispatch : {"einsum", "sparse"}) {
    d.contenders.push_back({"pytorch " + dispatch,
                            [&, dispatch](const std::string&) -> absl::StatusOr<RunMeasurement> {
                              STRATA_ASSIGN_OR_RETURN(
                                  PeerRun run, RunPeer(o, dispatch, inputs, scratch, 1, false));
                              return FigureOnly(run.seconds);
                            }});
  }
  d.check = [&]() -> absl::StatusOr<nlohmann::json> {
    nlohmann::json differences;
    for (const std::string dispatch : {"einsum", "sparse"}) {
      STRATA_ASSIGN_OR_RETURN(PeerRun run, RunPeer(o, dispatch, inputs, scratch, 1, true));
      const double dy = RelativeDifference(p.result.y, run.result.y);
      const double dx = RelativeDifference(p.result.grad_x, run.result.grad_x);
      std::printf("%-16s same result: output %.1e, input gradient %.1e\n",
                  ("pytorch " + dispatch).c_str(), dy, dx);
      if (dy > kMoeTolerance || dx > kMoeTolerance) {
        return absl::InternalError(absl::StrFormat(
            "the PyTorch %s peer computed something else: output differs by %.2e, input gradient "
            "by %.2e (relative to the largest value; at most %.0e is the same computation)",
            dispatch, dy, dx, kMoeTolerance));
      }
      differences[dispatch] = {{"output_difference", dy}, {"input_gradient_difference", dx}};
    }
    return differences;
  };
  return d;
}

}  // namespace

absl::Status RunMoeBench(const MoeBenchOptions& o) {
  if (o.tokens < 1 || o.dim < 1 || o.hidden < 1 || o.repeat < 1 || o.threads < 1) {
    return absl::InvalidArgumentError(
        "moe: --tokens, --dim, --hidden, --repeat and --threads must be > 0");
  }
  std::printf(
      "strata_bench moe: %lld tokens x %lld, %d experts of %lld hidden, top-%d, "
      "capacity factor %g, %d threads\n",
      static_cast<long long>(o.tokens), static_cast<long long>(o.dim), o.experts,
      static_cast<long long>(o.hidden), o.top_k, o.capacity, o.threads);
  const double gflops = MeasureSgemmGflops(2048, o.threads);
  SetCpuThreads(o.threads);
  STRATA_ASSIGN_OR_RETURN(MoeProblem problem, MakeProblem(o));
  STRATA_ASSIGN_OR_RETURN(const moe::Routing routing, problem.layer->routing());
  const int64_t kept = o.tokens * o.top_k - routing.dropped;
  // Each kept choice: two GEMMs forward (2 x 2DH), twice that backward.
  const double useful_flops =
      12.0 * static_cast<double>(o.dim * o.hidden) * static_cast<double>(kept);
  const double limit_seconds = useful_flops / (gflops * 1e9);
  std::printf("machine: SGEMM 2048^3 with %d threads: %.1f GFLOP/s\n", o.threads, gflops);
  std::printf(
      "routing: capacity %lld slots per expert, %lld of %lld choices kept (%lld dropped); "
      "useful expert work %.1f GFLOP per step -> limit %.3f s\n\n",
      static_cast<long long>(routing.capacity), static_cast<long long>(kept),
      static_cast<long long>(o.tokens * o.top_k), static_cast<long long>(routing.dropped),
      useful_flops / 1e9, limit_seconds);

  STRATA_ASSIGN_OR_RETURN(const ScratchDirectory scratch,
                          ScratchDirectory::Make("strata_moe_bench"));
  const std::string inputs = scratch.path() + "/inputs.bin";
  STRATA_RETURN_IF_ERROR(WriteInputs(inputs, problem.x, *problem.layer));
  const bool torch = o.with_peer && PythonHasTorch(o.python, scratch.path());
  if (o.with_peer && !torch) {
    std::printf("peers: skipped (%s cannot import torch; apt-get install python3-torch)\n",
                o.python.c_str());
  }
  BenchmarkDescription d = MoeBenchmark(o, problem, torch, inputs, scratch.path());
  d.facts = {{"tokens", o.tokens},
             {"dim", o.dim},
             {"hidden", o.hidden},
             {"experts", o.experts},
             {"top_k", o.top_k},
             {"capacity_factor", o.capacity},
             {"threads", o.threads},
             {"sgemm_gflops", gflops},
             {"useful_gflop", useful_flops / 1e9},
             {"limit_seconds", limit_seconds}};
  STRATA_ASSIGN_OR_RETURN(const BenchReport report, RunBenchmark(d));
  // The figures of the report before the harness, kept under their names.
  const std::vector<ContenderResult>& results = report.points[0].contenders;
  const double strata_seconds = results[0].median();
  nlohmann::json extra = {{"strata_seconds", strata_seconds}};
  for (size_t i = 1; i < results.size(); ++i) {
    const std::string dispatch = results[i].label.substr(results[i].label.find(' ') + 1);
    extra["peers"][dispatch] = report.facts["same_computation"][dispatch];
    extra["peers"][dispatch]["seconds"] = results[i].median();
    extra["peers"][dispatch]["ratio"] = results[i].median() / strata_seconds;
  }
  for (const ContenderResult& c : results) {
    std::printf("%-16s limit / time %3.0f%%\n", c.label.c_str(),
                100.0 * limit_seconds / c.median());
  }
  std::printf("\nstrata time / limit: %.2f\n", strata_seconds / limit_seconds);
  if (!o.workers.empty()) {
    STRATA_ASSIGN_OR_RETURN(extra["expert_parallel"],
                            RunExpertParallelSweep(o, strata_seconds, scratch.path()));
  }
  return WriteReport(report, extra, o.json_out, "");
}

}  // namespace strata::bench
