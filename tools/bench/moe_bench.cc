#include "tools/bench/moe_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "core/train/metrics_writer.h"
#include "core/util/clock.h"
#include "core/util/statistics.h"
#include "moe/moe_layer.h"
#include "tools/bench/harness/contender_environment.h"
#include "tools/bench/machine_limits.h"
#include "tools/bench/moe_parallel_bench.h"

namespace strata::bench {
namespace {

// Writes the layer's input and parameters (float32, in the order the peer
// script reads them) so that every contender computes on the same numbers.
absl::Status WriteInputs(const std::string& path, const Tensor& x, moe::MoeLayer& layer) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(x.data()), x.nbytes());
  for (const Parameter* p : layer.parameters()) {
    out.write(reinterpret_cast<const char*>(p->value.data()), p->value.nbytes());
  }
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// Median seconds of forward + backward, after one warm-up step.
double TimeLayer(moe::MoeLayer& layer, const Tensor& x, const Tensor& grad, int repeat) {
  std::vector<double> seconds;
  for (int r = 0; r <= repeat; ++r) {
    const double start = MonotonicSeconds();
    layer.Forward(x, /*training=*/true);
    layer.Backward(grad, /*need_input_grad=*/true);
    if (r > 0) seconds.push_back(MonotonicSeconds() - start);
  }
  return Median(seconds);
}

// What a contender computed on the shared inputs: the layer's output and
// the gradient of its input.
struct LayerResult {
  Tensor y, grad_x;
};

struct PeerRun {
  double seconds = 0;
  LayerResult result;
};

absl::StatusOr<LayerResult> ReadPeerOutputs(const std::string& path, const Shape& shape,
                                            const std::string& peer) {
  LayerResult r{Tensor::Empty(shape), Tensor::Empty(shape)};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(r.y.data()), r.y.nbytes());
  in.read(reinterpret_cast<char*>(r.grad_x.data()), r.grad_x.nbytes());
  if (!in || in.peek() != std::char_traits<char>::eof()) {
    return absl::DataLossError(absl::StrCat(peer, " wrote ", path, " with another size than two ",
                                            shape.ToString(), " float32 tensors"));
  }
  return r;
}

// Largest |a - b| over the largest |a|: float32 sums in another order
// stay far below kMoeTolerance; a different routing or formula does not.
double RelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 1e-30;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a.data()[i])));
  }
  return diff / scale;
}
constexpr double kMoeTolerance = 1e-4;

absl::StatusOr<PeerRun> RunPeer(const MoeBenchOptions& o, const std::string& dispatch,
                                const std::string& inputs, const std::string& scratch) {
  ProcessSpec spec;
  const std::string result = absl::StrCat(scratch, "/", dispatch, ".json");
  const std::string outputs = absl::StrCat(scratch, "/", dispatch, ".outputs.bin");
  spec.argv = {o.python,     SourceDir() + "/tools/bench/peers/torch_moe.py",
               "--inputs",   inputs,
               "--dispatch", dispatch,
               "--tokens",   std::to_string(o.tokens),
               "--dim",      std::to_string(o.dim),
               "--hidden",   std::to_string(o.hidden),
               "--experts",  std::to_string(o.experts),
               "--top-k",    std::to_string(o.top_k),
               "--capacity", absl::StrCat(o.capacity),
               "--threads",  std::to_string(o.threads),
               "--repeat",   std::to_string(o.repeat),
               "--json",     result,
               "--outputs",  outputs};
  spec.unset_env = UnsetForBenchmarks();
  spec.set_env = PeerEnvironment(o.threads);
  spec.output_path = absl::StrCat(scratch, "/", dispatch, ".log");
  STRATA_ASSIGN_OR_RETURN(int code, RunProcess(spec, absl::Minutes(30)));
  if (code != 0) {
    return absl::InternalError(absl::StrCat("the PyTorch ", dispatch, " peer exited with status ",
                                            code, ":\n", FileTail(spec.output_path, 2000)));
  }
  STRATA_ASSIGN_OR_RETURN(
      nlohmann::json j,
      ReadContenderResult(result, "seconds", absl::StrCat("the PyTorch ", dispatch, " peer"),
                          spec.output_path));
  PeerRun run;
  run.seconds = j["seconds"].get<double>();
  STRATA_ASSIGN_OR_RETURN(run.result,
                          ReadPeerOutputs(outputs, Shape({o.tokens, o.dim}),
                                          absl::StrCat("the PyTorch ", dispatch, " peer")));
  return run;
}

}  // namespace

absl::Status RunMoeBench(const MoeBenchOptions& o) {
  if (o.tokens < 1 || o.dim < 1 || o.hidden < 1 || o.repeat < 1 || o.threads < 1) {
    return absl::InvalidArgumentError(
        "moe: --tokens, --dim, --hidden, --repeat and --threads must be > 0");
  }
  moe::MoeOptions mo;
  mo.experts = o.experts;
  mo.top_k = o.top_k;
  mo.hidden = o.hidden;
  mo.capacity.factor = o.capacity;
  // The peers have no auxiliary load-balancing loss: without it, every
  // contender's input gradient is the same function's.
  mo.aux_loss_weight = 0.0f;
  STRATA_ASSIGN_OR_RETURN(auto layer, moe::MoeLayer::Create("moe", Shape{o.dim}, mo));
  SetCpuThreads(o.threads);
  Rng rng(1);
  layer->InitParameters(rng);
  Tensor x = Tensor::Empty({o.tokens, o.dim});
  FillUniform(x, rng, 1.0f);
  Tensor grad = Tensor::Full({o.tokens, o.dim}, 1.0f / static_cast<float>(o.tokens * o.dim));

  std::printf(
      "strata_bench moe: %lld tokens x %lld, %d experts of %lld hidden, top-%d, "
      "capacity factor %g, %d threads\n",
      static_cast<long long>(o.tokens), static_cast<long long>(o.dim), o.experts,
      static_cast<long long>(o.hidden), o.top_k, o.capacity, o.threads);
  const double gflops = MeasureSgemmGflops(2048, o.threads);
  const double strata_seconds = TimeLayer(*layer, x, grad, o.repeat);
  LayerResult strata;
  strata.y = layer->Forward(x, /*training=*/true).Clone();
  strata.grad_x = layer->Backward(grad, /*need_input_grad=*/true).Clone();
  const moe::Routing& routing = layer->routing();
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

  nlohmann::json report = {{"benchmark", "moe"},
                           {"tokens", o.tokens},
                           {"dim", o.dim},
                           {"hidden", o.hidden},
                           {"experts", o.experts},
                           {"top_k", o.top_k},
                           {"capacity_factor", o.capacity},
                           {"threads", o.threads},
                           {"sgemm_gflops", gflops},
                           {"useful_gflop", useful_flops / 1e9},
                           {"limit_seconds", limit_seconds},
                           {"strata_seconds", strata_seconds}};
  std::printf("%-22s %12s %12s %14s\n", "contender", "fwd+bwd s", "vs strata", "limit / time");
  std::printf("%-22s %12.3f %12s %13.0f%%\n", "strata", strata_seconds, "1.00x",
              100.0 * limit_seconds / strata_seconds);
  char scratch_template[] = "/tmp/strata_moe_bench_XXXXXX";
  const std::string scratch = ::mkdtemp(scratch_template);
  const std::string inputs = scratch + "/inputs.bin";
  absl::Status status = WriteInputs(inputs, x, *layer);
  const bool torch = o.with_peer && PythonHasTorch(o.python, scratch);
  if (o.with_peer && !torch) {
    std::printf("peers: skipped (%s cannot import torch; apt-get install python3-torch)\n",
                o.python.c_str());
  }
  for (const std::string dispatch : {"einsum", "sparse"}) {
    if (!status.ok() || !torch) break;
    absl::StatusOr<PeerRun> peer = RunPeer(o, dispatch, inputs, scratch);
    if (!peer.ok()) {
      status = peer.status();
      break;
    }
    const double seconds = peer->seconds;
    const double dy = RelativeDifference(strata.y, peer->result.y);
    const double dx = RelativeDifference(strata.grad_x, peer->result.grad_x);
    std::printf("%-22s %12.3f %11.2fx %13.0f%%   same result: output %.1e, input gradient %.1e\n",
                ("pytorch " + dispatch).c_str(), seconds, seconds / strata_seconds,
                100.0 * limit_seconds / seconds, dy, dx);
    report["peers"][dispatch] = {{"seconds", seconds},
                                 {"ratio", seconds / strata_seconds},
                                 {"output_difference", dy},
                                 {"input_gradient_difference", dx}};
    if (dy > kMoeTolerance || dx > kMoeTolerance) {
      status = absl::InternalError(absl::StrFormat(
          "the PyTorch %s peer computed something else: output differs by %.2e, input gradient by "
          "%.2e (relative to the largest value; at most %.0e is the same computation)",
          dispatch, dy, dx, kMoeTolerance));
      break;
    }
  }
  if (status.ok()) {
    std::printf("\nstrata time / limit: %.2f\n", strata_seconds / limit_seconds);
  }
  if (status.ok() && !o.workers.empty()) {
    absl::StatusOr<nlohmann::json> parallel = RunExpertParallelSweep(o, strata_seconds, scratch);
    if (parallel.ok()) {
      report["expert_parallel"] = *parallel;
    } else {
      status = parallel.status();
    }
  }
  std::filesystem::remove_all(scratch);
  STRATA_RETURN_IF_ERROR(status);
  if (!o.json_out.empty()) STRATA_RETURN_IF_ERROR(WriteJsonFile(o.json_out, report));
  return absl::OkStatus();
}

}  // namespace strata::bench
