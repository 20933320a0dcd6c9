#include "moe/expert_parallel.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/elementwise.h"
#include "core/status.h"

namespace strata::moe {
namespace {

constexpr int64_t kLargestCount = int64_t{1} << 40;

// Capacity rows [lo, hi) of chunk j of d.
std::pair<int64_t, int64_t> ChunkRows(int64_t capacity, int chunks, int j) {
  return {capacity * j / chunks, capacity * (j + 1) / chunks};
}

// For i in [0, counts.size()): counts[i] rows from row starts[i] of expert
// first + i of `buf` ({experts, capacity, dim}), one after another.
Tensor GatherRows(const Tensor& buf, int64_t capacity, int64_t dim, int first,
                  const std::vector<int64_t>& counts, const std::vector<int64_t>& starts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (total == 0) return Tensor();
  Tensor rows = Tensor::Empty({total, dim});
  float* dst = rows.data();
  for (size_t i = 0; i < counts.size(); ++i) {
    const float* src = buf.data() + ((first + static_cast<int64_t>(i)) * capacity + starts[i]) * dim;
    std::memcpy(dst, src, static_cast<size_t>(counts[i] * dim) * sizeof(float));
    dst += counts[i] * dim;
  }
  return rows;
}

// The inverse of GatherRows: writes `rows` back into `buf`.
void ScatterRows(const Tensor& rows, int64_t capacity, int64_t dim, int first,
                 const std::vector<int64_t>& counts, const std::vector<int64_t>& starts,
                 const Tensor& buf) {
  if (!rows.defined()) return;
  const float* src = rows.data();
  for (size_t i = 0; i < counts.size(); ++i) {
    float* dst = buf.data() + ((first + static_cast<int64_t>(i)) * capacity + starts[i]) * dim;
    std::memcpy(dst, src, static_cast<size_t>(counts[i] * dim) * sizeof(float));
    src += counts[i] * dim;
  }
}

// Each parameter of `ffn` is expert-major, so experts [first, first + n) are
// one contiguous range of it.
std::vector<int64_t> ShareSizes(const ExpertFfn& ffn, int n) {
  const int64_t d = ffn.dim(), h = ffn.hidden();
  return {n * d * h, n * h, n * h * d, n * d};
}

// The values (or gradients) of experts [first, first + n) of `ffn`.
ExchangeBlock PackExperts(ExpertFfn& ffn, int first, int n, bool grads) {
  ExchangeBlock block;
  block.counts = ShareSizes(ffn, n);
  int64_t total = 0;
  for (int64_t c : block.counts) total += c;
  block.rows = Tensor::Empty({total, 1});
  float* dst = block.rows.data();
  const std::vector<Parameter*> params = ffn.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& t = grads ? params[i]->grad : params[i]->value;
    const int64_t per_expert = t.numel() / ffn.experts();
    std::memcpy(dst, t.data() + first * per_expert, static_cast<size_t>(block.counts[i]) * 4);
    dst += block.counts[i];
  }
  return block;
}

// Writes (or, with `add`, adds) a PackExperts block into experts
// [first, ...) of `ffn`.
void UnpackExperts(const ExchangeBlock& block, ExpertFfn& ffn, int first, bool grads, bool add) {
  const float* src = block.rows.data();
  const std::vector<Parameter*> params = ffn.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& t = grads ? params[i]->grad : params[i]->value;
    const int64_t per_expert = t.numel() / ffn.experts();
    float* dst = t.data() + first * per_expert;
    if (add) {
      Axpy(1.0f, src, dst, block.counts[i]);
    } else {
      std::memcpy(dst, src, static_cast<size_t>(block.counts[i]) * 4);
    }
    src += block.counts[i];
  }
}

}  // namespace

const char* ParallelismName(ExpertParallelism r) {
  return r == ExpertParallelism::kData ? "data" : "expert";
}

absl::StatusOr<ExpertParallelism> ParseParallelism(const std::string& name) {
  if (name == "data") return ExpertParallelism::kData;
  if (name == "expert") return ExpertParallelism::kExpert;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown expert parallelism \"", name, "\" (data or expert)"));
}

absl::StatusOr<std::unique_ptr<ExpertParallel>> ExpertParallel::Create(
    const std::string& name_prefix, ExpertFfn& all, ExpertExchange* exchange, int layer) {
  const int experts = all.experts(), group = exchange->size();
  if (experts % group != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "moe ", name_prefix, ": ", experts, " experts cannot be split evenly over ", group,
        " processes (the expert group's size must divide the expert count",
        experts < group ? "; sharding one expert over several processes is not supported" : "",
        ")"));
  }
  auto parallel =
      std::unique_ptr<ExpertParallel>(new ExpertParallel(name_prefix, all, exchange, layer));
  UnpackExperts(PackExperts(all, parallel->first_, parallel->local_experts(), /*grads=*/false),
                parallel->local_, 0, /*grads=*/false, /*add=*/false);
  return parallel;
}

ExpertParallel::ExpertParallel(const std::string& name_prefix, const ExpertFfn& all,
                               ExpertExchange* exchange, int layer)
    : exchange_(exchange),
      layer_(layer),
      name_prefix_(name_prefix),
      first_(exchange->rank() * (all.experts() / exchange->size())),
      dim_(all.dim()),
      local_(name_prefix, all.experts() / exchange->size(), all.dim(), all.hidden()) {}

absl::Status ExpertParallel::set_settings(const ParallelSettings& settings) {
  if (settings.chunks < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the pipelining degree must be >= 1, got ", settings.chunks));
  }
  settings_ = settings;
  return absl::OkStatus();
}

ExchangeTag ExpertParallel::Tag(ExchangePhase phase, int chunk) const {
  ExchangeTag tag;
  tag.call = call_;
  tag.layer = layer_;
  tag.phase = phase;
  tag.chunk = chunk;
  tag.chunks = phase == ExchangePhase::kSlots || phase == ExchangePhase::kOutputs ||
                       phase == ExchangePhase::kOutputGrads || phase == ExchangePhase::kSlotGrads
                   ? call_settings_.chunks
                   : 1;
  return tag;
}

absl::Status ExpertParallel::Post(int to, const ExchangeTag& tag, ExchangeBlock block) {
  if (to == rank()) {
    kept_[tag] = std::move(block);
    return absl::OkStatus();
  }
  return exchange_->Send(to, tag, block);
}

absl::StatusOr<ExchangeBlock> ExpertParallel::Take(int from, const ExchangeTag& tag,
                                                   const BlockExpectation& expect) {
  if (from != rank()) return exchange_->Receive(from, tag, expect);
  auto it = kept_.find(tag);
  STRATA_CHECK(it != kept_.end(), "ExpertParallel: own block missing: " + tag.ToString());
  ExchangeBlock block = std::move(it->second);
  kept_.erase(it);
  return block;
}

absl::StatusOr<std::pair<int64_t, int64_t>> ExpertParallel::AgreeCapacity(int64_t largest_need,
                                                                          int64_t tokens) {
  call_settings_ = settings_;
  const ExchangeTag tag = Tag(ExchangePhase::kCapacity);
  BlockExpectation expect{0, {kLargestCount, kLargestCount}, false};
  for (int p = 0; p < size(); ++p) {
    STRATA_RETURN_IF_ERROR(Post(p, tag, ExchangeBlock{{largest_need, tokens}, Tensor()}));
  }
  std::pair<int64_t, int64_t> agreed{0, 0};
  for (int p = 0; p < size(); ++p) {
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, tag, expect));
    agreed.first = std::max(agreed.first, b.counts[0]);
    agreed.second = std::max(agreed.second, b.counts[1]);
  }
  return agreed;
}

absl::Status ExpertParallel::Forward(const Tensor& slots, const std::vector<int64_t>& used,
                                     const Tensor& out, bool training) {
  call_settings_ = settings_;
  capacity_ = slots.dim(1);
  absl::Status s;
  if (call_settings_.parallelism == ExpertParallelism::kExpert) {
    s = ForwardTokens(slots, used, out);
  } else {
    s = ExchangeWeights();
    if (s.ok()) replica_->Forward(slots, used, out, &replica_saved_);
  }
  if (!training) {
    saved_.clear();
    replica_saved_ = ExpertActivations();
    ++call_;
  }
  return s;
}

absl::Status ExpertParallel::Backward(const Tensor& grad_out, const Tensor& grad_slots) {
  absl::Status s = call_settings_.parallelism == ExpertParallelism::kExpert
                       ? BackwardTokens(grad_out, grad_slots)
                       : BackwardWeights(grad_out, grad_slots);
  if (s.ok()) {
    // Mean over the group's processes (see the header).
    const float scale = 1.0f / static_cast<float>(size());
    for (Parameter* p : local_.parameters()) Scale(scale, p->grad.data(), p->grad.numel());
  }
  saved_.clear();
  replica_saved_ = ExpertActivations();
  ++call_;
  return s;
}

absl::Status ExpertParallel::ForwardTokens(const Tensor& slots, const std::vector<int64_t>& used,
                                           const Tensor& out) {
  const int d = call_settings_.chunks, group = size(), owned = local_experts();
  const int64_t capacity = capacity_;
  sent_.assign(d, std::vector<std::vector<int64_t>>(group));
  received_.assign(d, std::vector<std::vector<int64_t>>(group));
  saved_.assign(d, ExpertActivations());
  // Every chunk's rows to their owners at once: the network works while we compute.
  for (int j = 0; j < d; ++j) {
    const auto [lo, hi] = ChunkRows(capacity, d, j);
    for (int p = 0; p < group; ++p) {
      std::vector<int64_t>& counts = sent_[j][p];
      for (int i = 0; i < owned; ++i) {
        counts.push_back(std::clamp<int64_t>(used[p * owned + i] - lo, 0, hi - lo));
      }
      ExchangeBlock block{counts, GatherRows(slots, capacity, dim_, p * owned, counts,
                                             std::vector<int64_t>(owned, lo))};
      STRATA_RETURN_IF_ERROR(Post(p, Tag(ExchangePhase::kSlots, j), std::move(block)));
    }
  }
  // As each chunk arrives from every source: our experts over all its rows
  // (sources one after another per expert), outputs straight back.
  for (int j = 0; j < d; ++j) {
    const auto [lo, hi] = ChunkRows(capacity, d, j);
    BlockExpectation expect{dim_, std::vector<int64_t>(owned, hi - lo), false};
    const int64_t rows_per_expert = (hi - lo) * group;
    Tensor buffer = Tensor::Empty({owned, std::max<int64_t>(rows_per_expert, 1), dim_});
    std::vector<int64_t> filled(owned, 0);
    std::vector<std::vector<int64_t>> starts(group);
    for (int s = 0; s < group; ++s) {
      STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(s, Tag(ExchangePhase::kSlots, j), expect));
      starts[s] = filled;
      ScatterRows(b.rows, rows_per_expert, dim_, 0, b.counts, starts[s], buffer);
      for (int i = 0; i < owned; ++i) filled[i] += b.counts[i];
      received_[j][s] = std::move(b.counts);
    }
    Tensor outputs = Tensor::Empty(buffer.shape());
    local_.Forward(buffer, filled, outputs, &saved_[j]);
    for (int s = 0; s < group; ++s) {
      ExchangeBlock back{received_[j][s], GatherRows(outputs, rows_per_expert, dim_, 0,
                                                     received_[j][s], starts[s])};
      STRATA_RETURN_IF_ERROR(Post(s, Tag(ExchangePhase::kOutputs, j), std::move(back)));
    }
  }
  for (int j = 0; j < d; ++j) {
    const int64_t lo = ChunkRows(capacity, d, j).first;
    for (int p = 0; p < group; ++p) {
      BlockExpectation expect{dim_, sent_[j][p], true};
      STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, Tag(ExchangePhase::kOutputs, j), expect));
      ScatterRows(b.rows, capacity, dim_, p * owned, b.counts, std::vector<int64_t>(owned, lo),
                  out);
    }
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::BackwardTokens(const Tensor& grad_out, const Tensor& grad_slots) {
  STRATA_CHECK(!saved_.empty(), "ExpertParallel::Backward without a training Forward");
  const int d = call_settings_.chunks, group = size(), owned = local_experts();
  const int64_t capacity = capacity_;
  for (int j = 0; j < d; ++j) {
    const int64_t lo = ChunkRows(capacity, d, j).first;
    for (int p = 0; p < group; ++p) {
      ExchangeBlock block{sent_[j][p], GatherRows(grad_out, capacity, dim_, p * owned, sent_[j][p],
                                                  std::vector<int64_t>(owned, lo))};
      STRATA_RETURN_IF_ERROR(Post(p, Tag(ExchangePhase::kOutputGrads, j), std::move(block)));
    }
  }
  for (int j = 0; j < d; ++j) {
    const int64_t rows_per_expert = saved_[j].slots.dim(1);
    Tensor grads = Tensor::Empty(saved_[j].slots.shape());
    std::vector<std::vector<int64_t>> starts(group);
    std::vector<int64_t> filled(owned, 0);
    for (int s = 0; s < group; ++s) {
      BlockExpectation expect{dim_, received_[j][s], true};
      STRATA_ASSIGN_OR_RETURN(ExchangeBlock b,
                              Take(s, Tag(ExchangePhase::kOutputGrads, j), expect));
      starts[s] = filled;
      ScatterRows(b.rows, rows_per_expert, dim_, 0, b.counts, starts[s], grads);
      for (int i = 0; i < owned; ++i) filled[i] += b.counts[i];
    }
    Tensor grad_rows = Tensor::Empty(grads.shape());
    local_.Backward(grads, saved_[j], grad_rows, /*accumulate=*/j > 0);
    for (int s = 0; s < group; ++s) {
      ExchangeBlock back{received_[j][s], GatherRows(grad_rows, rows_per_expert, dim_, 0,
                                                     received_[j][s], starts[s])};
      STRATA_RETURN_IF_ERROR(Post(s, Tag(ExchangePhase::kSlotGrads, j), std::move(back)));
    }
  }
  for (int j = 0; j < d; ++j) {
    const int64_t lo = ChunkRows(capacity, d, j).first;
    for (int p = 0; p < group; ++p) {
      BlockExpectation expect{dim_, sent_[j][p], true};
      STRATA_ASSIGN_OR_RETURN(ExchangeBlock b,
                              Take(p, Tag(ExchangePhase::kSlotGrads, j), expect));
      ScatterRows(b.rows, capacity, dim_, p * owned, b.counts, std::vector<int64_t>(owned, lo),
                  grad_slots);
    }
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::ExchangeWeights() {
  const int group = size(), owned = local_experts();
  if (replica_ == nullptr) {
    replica_ = std::make_unique<ExpertFfn>(name_prefix_, owned * group, dim_, local_.hidden());
  }
  const ExchangeTag tag = Tag(ExchangePhase::kWeights);
  const ExchangeBlock mine = PackExperts(local_, 0, owned, /*grads=*/false);
  for (int p = 0; p < group; ++p) STRATA_RETURN_IF_ERROR(Post(p, tag, mine));
  BlockExpectation expect{1, ShareSizes(local_, owned), true};
  for (int p = 0; p < group; ++p) {
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, tag, expect));
    UnpackExperts(b, *replica_, p * owned, /*grads=*/false, /*add=*/false);
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::BackwardWeights(const Tensor& grad_out, const Tensor& grad_slots) {
  STRATA_CHECK(replica_saved_.slots.defined(),
               "ExpertParallel::Backward without a training Forward");
  const int group = size(), owned = local_experts();
  replica_->Backward(grad_out, replica_saved_, grad_slots, /*accumulate=*/false);
  const ExchangeTag tag = Tag(ExchangePhase::kWeightGrads);
  for (int p = 0; p < group; ++p) {
    STRATA_RETURN_IF_ERROR(Post(p, tag, PackExperts(*replica_, p * owned, owned, /*grads=*/true)));
  }
  BlockExpectation expect{1, ShareSizes(local_, owned), true};
  for (int p = 0; p < group; ++p) {
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, tag, expect));
    UnpackExperts(b, local_, 0, /*grads=*/true, /*add=*/p > 0);
  }
  return absl::OkStatus();
}

absl::StatusOr<ExpertFfn*> ExpertParallel::GatherReplica() {
  call_settings_ = settings_;
  absl::Status s = ExchangeWeights();
  ++call_;
  STRATA_RETURN_IF_ERROR(s);
  return replica_.get();
}

}  // namespace strata::moe
