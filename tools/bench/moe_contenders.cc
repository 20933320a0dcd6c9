#include "tools/bench/moe_contenders.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/process/subprocess.h"
#include "core/status.h"
#include "tools/bench/harness/contender_environment.h"

namespace strata::bench {
namespace {

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

}  // namespace

absl::Status WriteInputs(const std::string& path, const Tensor& x, moe::MoeLayer& layer) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(x.data()), x.nbytes());
  for (const Parameter* p : layer.parameters()) {
    out.write(reinterpret_cast<const char*>(p->value.data()), p->value.nbytes());
  }
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<PeerRun> RunPeer(const MoeBenchOptions& o, const std::string& dispatch,
                                const std::string& inputs, const std::string& scratch, int repeat,
                                bool with_result) {
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
               "--repeat",   std::to_string(repeat),
               "--json",     result};
  if (with_result) spec.argv.insert(spec.argv.end(), {"--outputs", outputs});
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
  if (!with_result) return run;
  STRATA_ASSIGN_OR_RETURN(run.result,
                          ReadPeerOutputs(outputs, Shape({o.tokens, o.dim}),
                                          absl::StrCat("the PyTorch ", dispatch, " peer")));
  return run;
}

double RelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, scale = 1e-30;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a.data()[i]) - b.data()[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(a.data()[i])));
  }
  return diff / scale;
}
}  // namespace strata::bench
