#include "moe/group/group_member.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "core/train/checkpoint.h"
#include "core/util/clock.h"
#include "core/util/rng.h"
#include "core/util/statistics.h"
#include "moe/zmq_expert_exchange.h"

namespace strata::moe {
namespace {

Tensor Draw(uint64_t seed, int64_t tokens, int64_t dim, float bound) {
  Rng rng(seed);
  Tensor t = Tensor::Empty({tokens, dim});
  FillUniform(t, rng, bound);
  return t;
}

}  // namespace

Tensor MemberTokens(uint64_t seed, int rank, int64_t tokens, int64_t dim) {
  return Draw(seed * 7919 + 2 * static_cast<uint64_t>(rank) + 1, tokens, dim, 1.0f);
}

Tensor MemberOutputGrad(uint64_t seed, int rank, int64_t tokens, int64_t dim) {
  return Draw(seed * 7919 + 2 * static_cast<uint64_t>(rank) + 2, tokens, dim,
              1.0f / static_cast<float>(tokens));
}

std::string MemberDumpPath(const std::string& dir, int rank, const ParallelSettings& settings) {
  return absl::StrCat(dir, "/rank", rank, "_d", settings.chunks, "_",
                      ParallelismName(settings.parallelism), ".ckpt");
}

std::vector<std::string> MemberCommandLine(const std::string& binary, const GroupMemberOptions& o,
                                           const std::vector<int>& chunks,
                                           const std::vector<ExpertParallelism>& parallelisms) {
  std::vector<std::string> names;
  for (ExpertParallelism r : parallelisms) names.push_back(ParallelismName(r));
  std::vector<std::string> argv = {binary,
                                   "--rank",
                                   std::to_string(o.rank),
                                   "--size",
                                   std::to_string(o.size),
                                   "--addresses",
                                   absl::StrJoin(o.addresses, ","),
                                   "--tokens",
                                   std::to_string(o.tokens),
                                   "--dim",
                                   std::to_string(o.dim),
                                   "--hidden",
                                   std::to_string(o.layer.hidden),
                                   "--experts",
                                   std::to_string(o.layer.experts),
                                   "--top-k",
                                   std::to_string(o.layer.top_k),
                                   "--capacity",
                                   absl::StrCat(o.layer.capacity.factor),
                                   "--aux-loss-weight",
                                   absl::StrCat(o.layer.aux_loss_weight),
                                   "--chunks",
                                   absl::StrJoin(chunks, ","),
                                   "--parallelism",
                                   absl::StrJoin(names, ","),
                                   "--repeat",
                                   std::to_string(o.repeat),
                                   "--threads",
                                   std::to_string(o.threads),
                                   "--seed",
                                   std::to_string(o.seed),
                                   "--timeout",
                                   std::to_string(absl::ToInt64Seconds(o.timeout))};
  if (!o.dump_dir.empty()) {
    argv.push_back("--dump-dir");
    argv.push_back(o.dump_dir);
  }
  return argv;
}

absl::Status RunGroupMember(const GroupMemberOptions& o) {
  SetCpuThreads(o.threads);
  STRATA_ASSIGN_OR_RETURN(auto layer, MoeLayer::Create("moe", Shape{o.dim}, o.layer));
  Rng rng(o.seed);
  layer->InitParameters(rng);
  ExpertExchangeOptions eo;
  eo.rank = o.rank;
  eo.size = o.size;
  eo.credentials.job_id = o.seed;  // members started with another seed are not of this group
  eo.credentials.token = o.job_token;
  eo.timeout = o.timeout;
  eo.peer_name = "member";
  if (static_cast<int>(o.addresses.size()) != o.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(o.addresses.size(), " addresses for a group of ", o.size));
  }
  STRATA_ASSIGN_OR_RETURN(auto exchange, ZmqExpertExchange::Bind(o.addresses[o.rank], eo));
  STRATA_RETURN_IF_ERROR(exchange->Connect(o.addresses));
  STRATA_RETURN_IF_ERROR(layer->JoinExpertGroup(exchange.get(), 0));
  const Tensor x = MemberTokens(o.seed, o.rank, o.tokens, o.dim);
  const Tensor grad_y = MemberOutputGrad(o.seed, o.rank, o.tokens, o.dim);
  // One warm-up step per setting, then `repeat` rounds that each run every
  // setting once, each round starting one setting later: settings
  // alternate, so a noisy moment or a switch of settings hits them alike.
  const size_t n = o.settings.size();
  std::vector<std::vector<double>> seconds(n);
  std::vector<Tensor> outputs(n), input_grads(n);
  for (int round = 0; round <= o.repeat; ++round) {
    for (size_t j = 0; j < n; ++j) {
      const size_t i = (j + static_cast<size_t>(round)) % n;
      STRATA_RETURN_IF_ERROR(layer->set_parallel_settings(o.settings[i]));
      const double start = MonotonicSeconds();
      outputs[i] = layer->Forward(x, /*training=*/true);
      input_grads[i] = layer->Backward(grad_y, /*need_input_grad=*/true);
      STRATA_RETURN_IF_ERROR_CTX(layer->status(), absl::StrCat("member ", o.rank));
      if (round > 0) seconds[i].push_back(MonotonicSeconds() - start);
      if (round == o.repeat && !o.dump_dir.empty()) {
        Checkpoint dump;
        dump.tensors.push_back({"output", outputs[i]});
        dump.tensors.push_back({"grad_input", input_grads[i]});
        for (Parameter* p : layer->parameters()) {
          dump.tensors.push_back({p->name + ".grad", p->grad});
        }
        STRATA_RETURN_IF_ERROR(
            WriteCheckpoint(MemberDumpPath(o.dump_dir, o.rank, o.settings[i]), dump));
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(const Routing routing, layer->routing());
  for (size_t i = 0; i < n; ++i) {
    nlohmann::json line = {{"rank", o.rank},
                           {"chunks", o.settings[i].chunks},
                           {"parallelism", ParallelismName(o.settings[i].parallelism)},
                           {"seconds", seconds[i].empty() ? 0.0 : Median(seconds[i])},
                           {"dropped", routing.dropped},
                           {"capacity", routing.capacity}};
    std::printf("%s\n", line.dump().c_str());
  }
  std::fflush(stdout);
  std::fprintf(stderr, "[member %d] done: %llu bytes sent, %llu received, %llu blocks refused\n",
               o.rank, static_cast<unsigned long long>(exchange->bytes_sent()),
               static_cast<unsigned long long>(exchange->bytes_received()),
               static_cast<unsigned long long>(exchange->refused()));
  return absl::OkStatus();
}

}  // namespace strata::moe
