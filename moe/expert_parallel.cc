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
    const float* src =
        buf.data() + ((first + static_cast<int64_t>(i)) * capacity + starts[i]) * dim;
    std::memcpy(dst, src, static_cast<size_t>(counts[i] * dim) * sizeof(float));
    dst += counts[i] * dim;
  }
  return rows;
}

// The inverse of GatherRows: writes (or, with `add`, adds) `rows` back into
// `buf`.
void ScatterRows(const Tensor& rows, int64_t capacity, int64_t dim, int first,
                 const std::vector<int64_t>& counts, const std::vector<int64_t>& starts,
                 const Tensor& buf, bool add = false) {
  if (!rows.defined()) return;
  const float* src = rows.data();
  for (size_t i = 0; i < counts.size(); ++i) {
    float* dst = buf.data() + ((first + static_cast<int64_t>(i)) * capacity + starts[i]) * dim;
    if (add) {
      Axpy(1.0f, src, dst, counts[i] * dim);
    } else {
      std::memcpy(dst, src, static_cast<size_t>(counts[i] * dim) * sizeof(float));
    }
    src += counts[i] * dim;
  }
}

// Parameter `param` (0 w1, 1 b1, 2 w2, 3 b2) of all experts seen as
// {experts, rows, cols}: a share covers columns [begin, begin + width) of
// every row of its experts (width 0: none of it).
struct SliceGeometry {
  int64_t rows, cols, begin, width;
};

SliceGeometry Geometry(int param, int64_t dim, int64_t hidden, const ExpertShare& s) {
  switch (param) {
    case 0:  // w1 {E, D, H}: the share's hidden columns
      return {dim, hidden, s.hidden_begin, s.hidden};
    case 1:  // b1 {E, H}
      return {1, hidden, s.hidden_begin, s.hidden};
    case 2:  // w2 {E, H, D}: the share's hidden rows, contiguous
      return {1, hidden * dim, s.hidden_begin * dim, s.hidden * dim};
    default:  // b2 {E, D}: with the first hidden slice only
      return {1, dim, 0, s.output_bias ? dim : 0};
  }
}

constexpr int kParams = 4;

// Floats of each parameter in a share: the counts of its weight blocks.
std::vector<int64_t> ShareCounts(int64_t dim, int64_t hidden, const ExpertShare& s) {
  std::vector<int64_t> counts;
  for (int i = 0; i < kParams; ++i) {
    const SliceGeometry g = Geometry(i, dim, hidden, s);
    counts.push_back(s.experts * g.rows * g.width);
  }
  return counts;
}

const Tensor& ValuesOrGrads(Parameter* p, bool grads) { return grads ? p->grad : p->value; }

// The parameters (values or gradients) of `local`, which holds exactly the
// share, one after another: a weight block.
ExchangeBlock PackLocal(ExpertFfn& local, const std::vector<int64_t>& counts, bool grads) {
  ExchangeBlock block;
  block.counts = counts;
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  block.rows = Tensor::Empty({total, 1});
  float* dst = block.rows.data();
  for (Parameter* p : local.parameters()) {
    const Tensor& t = ValuesOrGrads(p, grads);
    std::memcpy(dst, t.data(), t.nbytes());
    dst += t.numel();
  }
  return block;
}

// Writes (or adds) a weight block into `local`, which holds exactly the share.
void UnpackLocal(const ExchangeBlock& block, ExpertFfn& local, bool grads, bool add) {
  const float* src = block.rows.data();
  for (Parameter* p : local.parameters()) {
    const Tensor& t = ValuesOrGrads(p, grads);
    if (add) {
      Axpy(1.0f, src, t.data(), t.numel());
    } else {
      std::memcpy(t.data(), src, t.nbytes());
    }
    src += t.numel();
  }
}

// Between a weight block of share `s` and `full`, which holds all experts.
ExchangeBlock PackFromFull(ExpertFfn& full, const ExpertShare& s, bool grads) {
  ExchangeBlock block;
  block.counts = ShareCounts(full.dim(), full.hidden(), s);
  int64_t total = 0;
  for (int64_t c : block.counts) total += c;
  block.rows = Tensor::Empty({total, 1});
  float* dst = block.rows.data();
  const std::vector<Parameter*> params = full.parameters();
  for (int i = 0; i < kParams; ++i) {
    const SliceGeometry g = Geometry(i, full.dim(), full.hidden(), s);
    const float* base = ValuesOrGrads(params[i], grads).data();
    for (int64_t r = 0; r < s.experts * g.rows; ++r) {
      const float* src = base + (s.first_expert * g.rows + r) * g.cols + g.begin;
      std::memcpy(dst, src, static_cast<size_t>(g.width) * sizeof(float));
      dst += g.width;
    }
  }
  return block;
}

void UnpackIntoFull(const ExchangeBlock& block, ExpertFfn& full, const ExpertShare& s, bool grads) {
  const float* src = block.rows.data();
  const std::vector<Parameter*> params = full.parameters();
  for (int i = 0; i < kParams; ++i) {
    const SliceGeometry g = Geometry(i, full.dim(), full.hidden(), s);
    float* base = ValuesOrGrads(params[i], grads).data();
    for (int64_t r = 0; r < s.experts * g.rows; ++r) {
      float* dst = base + (s.first_expert * g.rows + r) * g.cols + g.begin;
      std::memcpy(dst, src, static_cast<size_t>(g.width) * sizeof(float));
      src += g.width;
    }
  }
}

// The share of process `rank` of `group` (see the header's layout).
ExpertShare ShareOf(int rank, int experts, int group, int64_t hidden) {
  if (experts >= group) {
    const int owned = experts / group;
    return {rank * owned, owned, 0, hidden, true};
  }
  const int shards = group / experts;
  const int64_t slice = hidden / shards;
  return {rank / shards, 1, (rank % shards) * slice, slice, rank % shards == 0};
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
  const std::string what =
      absl::StrCat("moe ", name_prefix, ": ", experts, " experts over ", group, " processes");
  if (experts >= group && experts % group != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the group's size must divide the expert count"));
  }
  if (experts < group && group % experts != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": to shard each expert, the expert count must divide the group's size"));
  }
  const int shards = experts < group ? group / experts : 1;
  if (all.hidden() % shards != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": each expert's ", all.hidden(),
                                                   " hidden units cannot be split into ", shards,
                                                   " equal slices"));
  }
  const ExpertShare mine = ShareOf(exchange->rank(), experts, group, all.hidden());
  auto parallel =
      std::unique_ptr<ExpertParallel>(new ExpertParallel(name_prefix, all, exchange, layer, mine));
  UnpackLocal(PackFromFull(all, mine, /*grads=*/false), parallel->local_, /*grads=*/false,
              /*add=*/false);
  return parallel;
}

ExpertShare ExpertParallel::share(int rank) const {
  return ShareOf(rank, experts_, size(), hidden_);
}

ExpertParallel::ExpertParallel(const std::string& name_prefix, const ExpertFfn& all,
                               ExpertExchange* exchange, int layer, const ExpertShare& mine)
    : exchange_(exchange),
      layer_(layer),
      name_prefix_(name_prefix),
      experts_(all.experts()),
      dim_(all.dim()),
      hidden_(all.hidden()),
      local_(name_prefix, mine.experts, all.dim(), mine.hidden, mine.output_bias) {}

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

absl::Status ExpertParallel::SendToHolders(const Tensor& buf, ExchangePhase phase) {
  const int d = call_settings_.chunks, owned = local_experts();
  for (int j = 0; j < d; ++j) {
    const int64_t lo = ChunkRows(capacity_, d, j).first;
    for (int p = 0; p < size(); ++p) {
      ExchangeBlock block{sent_[j][p], GatherRows(buf, capacity_, dim_, share(p).first_expert,
                                                  sent_[j][p], std::vector<int64_t>(owned, lo))};
      STRATA_RETURN_IF_ERROR(Post(p, Tag(phase, j), std::move(block)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ExpertParallel::ReceiveChunk(int j, ExchangePhase phase,
                                                    std::vector<std::vector<int64_t>>* starts,
                                                    std::vector<int64_t>* filled) {
  const int owned = local_experts();
  const auto [lo, hi] = ChunkRows(capacity_, call_settings_.chunks, j);
  const int64_t rows_per_expert = std::max<int64_t>((hi - lo) * size(), 1);
  Tensor buffer = Tensor::Empty({owned, rows_per_expert, dim_});
  starts->assign(size(), {});
  filled->assign(owned, 0);
  const bool first_pass = phase == ExchangePhase::kSlots;
  for (int s = 0; s < size(); ++s) {
    // Slots: up to the chunk's rows per expert; their gradients: exactly
    // the rows that came with the slots.
    BlockExpectation expect =
        first_pass ? BlockExpectation{dim_, std::vector<int64_t>(owned, hi - lo), false}
                   : BlockExpectation{dim_, received_[j][s], true};
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(s, Tag(phase, j), expect));
    (*starts)[s] = *filled;
    ScatterRows(b.rows, rows_per_expert, dim_, 0, b.counts, (*starts)[s], buffer);
    for (int i = 0; i < owned; ++i) (*filled)[i] += b.counts[i];
    if (first_pass) received_[j][s] = std::move(b.counts);
  }
  return buffer;
}

absl::Status ExpertParallel::ReturnChunk(int j, ExchangePhase phase, const Tensor& rows,
                                         const std::vector<std::vector<int64_t>>& starts) {
  for (int s = 0; s < size(); ++s) {
    ExchangeBlock back{received_[j][s],
                       GatherRows(rows, rows.dim(1), dim_, 0, received_[j][s], starts[s])};
    STRATA_RETURN_IF_ERROR(Post(s, Tag(phase, j), std::move(back)));
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::CollectFromHolders(ExchangePhase phase, const Tensor& buf) {
  const int d = call_settings_.chunks, owned = local_experts();
  for (int j = 0; j < d; ++j) {
    const int64_t lo = ChunkRows(capacity_, d, j).first;
    for (int p = 0; p < size(); ++p) {
      BlockExpectation expect{dim_, sent_[j][p], true};
      STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, Tag(phase, j), expect));
      // The first holder of an expert writes; the other slices of a sharded
      // expert add their parts.
      const ExpertShare holder = share(p);
      ScatterRows(b.rows, capacity_, dim_, holder.first_expert, b.counts,
                  std::vector<int64_t>(owned, lo), buf, /*add=*/!holder.output_bias);
    }
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::ForwardTokens(const Tensor& slots, const std::vector<int64_t>& used,
                                           const Tensor& out) {
  const int d = call_settings_.chunks, group = size(), owned = local_experts();
  sent_.assign(d, std::vector<std::vector<int64_t>>(group));
  received_.assign(d, std::vector<std::vector<int64_t>>(group));
  saved_.assign(d, ExpertActivations());
  for (int j = 0; j < d; ++j) {
    const auto [lo, hi] = ChunkRows(capacity_, d, j);
    for (int p = 0; p < group; ++p) {
      for (int i = 0; i < owned; ++i) {
        const int64_t rows = used[share(p).first_expert + i] - lo;
        sent_[j][p].push_back(std::clamp<int64_t>(rows, 0, hi - lo));
      }
    }
  }
  // Every chunk to its holders at once: the network works while we compute.
  STRATA_RETURN_IF_ERROR(SendToHolders(slots, ExchangePhase::kSlots));
  // As each chunk arrives from every source: our experts over all its rows,
  // the outputs straight back.
  for (int j = 0; j < d; ++j) {
    std::vector<std::vector<int64_t>> starts;
    std::vector<int64_t> filled;
    STRATA_ASSIGN_OR_RETURN(Tensor rows, ReceiveChunk(j, ExchangePhase::kSlots, &starts, &filled));
    Tensor outputs = Tensor::Empty(rows.shape());
    local_.Forward(rows, filled, outputs, &saved_[j]);
    STRATA_RETURN_IF_ERROR(ReturnChunk(j, ExchangePhase::kOutputs, outputs, starts));
  }
  return CollectFromHolders(ExchangePhase::kOutputs, out);
}

absl::Status ExpertParallel::BackwardTokens(const Tensor& grad_out, const Tensor& grad_slots) {
  STRATA_CHECK(!saved_.empty(), "ExpertParallel::Backward without a training Forward");
  STRATA_RETURN_IF_ERROR(SendToHolders(grad_out, ExchangePhase::kOutputGrads));
  for (int j = 0; j < call_settings_.chunks; ++j) {
    std::vector<std::vector<int64_t>> starts;
    std::vector<int64_t> filled;
    STRATA_ASSIGN_OR_RETURN(Tensor grads,
                            ReceiveChunk(j, ExchangePhase::kOutputGrads, &starts, &filled));
    Tensor grad_rows = Tensor::Empty(grads.shape());
    local_.Backward(grads, saved_[j], grad_rows, /*accumulate=*/j > 0);
    STRATA_RETURN_IF_ERROR(ReturnChunk(j, ExchangePhase::kSlotGrads, grad_rows, starts));
  }
  return CollectFromHolders(ExchangePhase::kSlotGrads, grad_slots);
}

absl::Status ExpertParallel::ExchangeWeights() {
  const int group = size();
  if (replica_ == nullptr) {
    replica_ = std::make_unique<ExpertFfn>(name_prefix_, experts_, dim_, hidden_);
  }
  const ExchangeTag tag = Tag(ExchangePhase::kWeights);
  const ExchangeBlock mine =
      PackLocal(local_, ShareCounts(dim_, hidden_, share(rank())), /*grads=*/false);
  for (int p = 0; p < group; ++p) STRATA_RETURN_IF_ERROR(Post(p, tag, mine));
  for (int p = 0; p < group; ++p) {
    BlockExpectation expect{1, ShareCounts(dim_, hidden_, share(p)), true};
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, tag, expect));
    UnpackIntoFull(b, *replica_, share(p), /*grads=*/false);
  }
  return absl::OkStatus();
}

absl::Status ExpertParallel::BackwardWeights(const Tensor& grad_out, const Tensor& grad_slots) {
  STRATA_CHECK(replica_saved_.slots.defined(),
               "ExpertParallel::Backward without a training Forward");
  const int group = size();
  replica_->Backward(grad_out, replica_saved_, grad_slots, /*accumulate=*/false);
  const ExchangeTag tag = Tag(ExchangePhase::kWeightGrads);
  for (int p = 0; p < group; ++p) {
    STRATA_RETURN_IF_ERROR(Post(p, tag, PackFromFull(*replica_, share(p), /*grads=*/true)));
  }
  BlockExpectation expect{1, ShareCounts(dim_, hidden_, share(rank())), true};
  for (int p = 0; p < group; ++p) {
    STRATA_ASSIGN_OR_RETURN(ExchangeBlock b, Take(p, tag, expect));
    UnpackLocal(b, local_, /*grads=*/true, /*add=*/p > 0);
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
