#include "moe/moe_layer.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "moe/dispatch.h"

namespace strata::moe {
namespace {

absl::Status CheckTopK(int k, int experts) {
  if (k >= 1 && k <= experts) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("moe top_k must be in [1, experts = ", experts, "], got ", k));
}

}  // namespace

absl::StatusOr<std::unique_ptr<MoeLayer>> MoeLayer::Create(std::string name,
                                                           const Shape& input_shape,
                                                           const MoeOptions& o) {
  if (input_shape.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("moe needs a vector input [D], got ",
                                                   input_shape.ToString(),
                                                   " (put a flatten layer before it)"));
  }
  if (o.experts < 1) {
    return absl::InvalidArgumentError(absl::StrCat("moe needs experts >= 1, got ", o.experts));
  }
  STRATA_RETURN_IF_ERROR(CheckTopK(o.top_k, o.experts));
  if (o.hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat("moe needs hidden >= 1, got ", o.hidden));
  }
  if (o.capacity.alignment < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("moe capacity alignment must be >= 1, got ", o.capacity.alignment));
  }
  return std::unique_ptr<MoeLayer>(new MoeLayer(std::move(name), input_shape, o));
}

MoeLayer::MoeLayer(std::string name, const Shape& input_shape, const MoeOptions& o)
    : Layer(std::move(name), input_shape),
      options_(o),
      dim_(input_shape[0]),
      experts_(std::make_unique<ExpertFfn>(this->name(), o.experts, dim_, o.hidden)),
      noise_(o.noise_seed) {
  gate_ = ZeroParameter(this->name() + ".gate", {o.experts, dim_}, HostBackend());
}

std::vector<Parameter*> MoeLayer::expert_parameters() {
  return parallel_ ? parallel_->parameters() : experts_->parameters();
}

std::vector<Parameter*> MoeLayer::parameters() {
  std::vector<Parameter*> all = {&gate_};
  for (Parameter* p : expert_parameters()) all.push_back(p);
  return all;
}

void MoeLayer::InitParameters(Rng& rng) {
  STRATA_CHECK(experts_ != nullptr, "MoeLayer::InitParameters inside an expert group");
  FillUniform(gate_.value, rng, 1.0f / std::sqrt(static_cast<float>(dim_)));
  experts_->InitParameters(rng);
}

int64_t MoeLayer::ForwardFlopsPerSample() const {
  return 2 * dim_ * options_.experts + options_.top_k * 4 * dim_ * options_.hidden;
}

absl::Status MoeLayer::set_top_k(int k) {
  STRATA_RETURN_IF_ERROR(CheckTopK(k, options_.experts));
  options_.top_k = k;
  return absl::OkStatus();
}

absl::Status MoeLayer::JoinExpertGroup(ExpertExchange* exchange, int layer) {
  if (parallel_ != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("moe ", name(), " is already in a group"));
  }
  STRATA_ASSIGN_OR_RETURN(auto parallel,
                          ExpertParallel::Create(name(), *experts_, exchange, layer));
  STRATA_RETURN_IF_ERROR(parallel->set_settings(options_.parallel));
  parallel_ = std::move(parallel);
  experts_.reset();
  return absl::OkStatus();
}

absl::Status MoeLayer::set_parallel_settings(const ParallelSettings& settings) {
  if (parallel_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("moe ", name(), " is not in a group"));
  }
  return parallel_->set_settings(settings);
}

absl::Status MoeLayer::GatherExperts() {
  if (parallel_ == nullptr) return absl::OkStatus();  // every expert is here already
  absl::StatusOr<ExpertFfn*> all = parallel_->GatherReplica();
  if (!all.ok()) status_ = all.status();
  STRATA_RETURN_IF_ERROR(status_);
  inference_replica_ = *all;
  return absl::OkStatus();
}

absl::Status MoeLayer::LeaveExpertGroup() {
  STRATA_RETURN_IF_ERROR(GatherExperts());
  experts_ = std::make_unique<ExpertFfn>(name(), options_.experts, dim_, options_.hidden);
  const std::vector<Parameter*> from = inference_replica_->parameters();
  const std::vector<Parameter*> to = experts_->parameters();
  for (size_t i = 0; i < to.size(); ++i) to[i]->value.CopyFrom(from[i]->value);
  inference_replica_ = nullptr;
  parallel_.reset();
  return absl::OkStatus();
}

absl::Status MoeLayer::Route() {
  int64_t tokens = gate_out_.tokens;
  // Only f <= 0 sizes the slots by the need.
  int64_t need = options_.capacity.factor <= 0 ? LargestNeed(gate_out_, options_.experts) : 0;
  if (parallel_ != nullptr && inference_replica_ == nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::tie(need, tokens), parallel_->AgreeCapacity(need, tokens));
  }
  const int64_t capacity =
      CapacityFor(options_.capacity, tokens, options_.experts, gate_out_.k, need);
  routing_ = AssignSlots(gate_out_, options_.experts, capacity, options_.batch_prioritized);
  return absl::OkStatus();
}

bool MoeLayer::RunExperts(const Tensor& slots, const Tensor& out, bool training) {
  if (parallel_ == nullptr) {
    experts_->Forward(slots, routing_.used, out, &experts_saved_);
  } else if (!training && inference_replica_ != nullptr) {
    inference_replica_->Forward(slots, routing_.used, out, &experts_saved_);
  } else {
    status_ = parallel_->Forward(slots, routing_.used, out, training);
  }
  if (!training) experts_saved_ = ExpertActivations();
  return status_.ok();
}

absl::Status MoeLayer::ValidateInput(const Tensor& input) const {
  if (input.shape().rank() != 2 || input.dim(1) != dim_) {
    return absl::InvalidArgumentError(absl::StrCat("moe ", name(), ": tokens of dimension ", dim_,
                                                   " expected, got ", input.shape().ToString()));
  }
  return absl::OkStatus();
}

Tensor MoeLayer::Forward(const Tensor& input, bool training) {
  const absl::Status valid = ValidateInput(input);
  STRATA_CHECK(valid.ok(), std::string(valid.message()));
  const int64_t tokens = input.dim(0);
  const int experts = options_.experts;
  Tensor output = Tensor::Empty({tokens, dim_});
  // A failed group: zeros and no more work (see the header).
  auto zeros = [&output] {
    output.Fill(0.0f);
    return output;
  };
  if (!status_.ok()) return zeros();
  if (training) inference_replica_ = nullptr;
  // Gate in fp32: logits = x G^T, plus training noise.
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  Sgemm('N', 'T', tokens, experts, dim_, 1.0f, input.data(), dim_, gate_.value.data(), dim_, 0.0f,
        logits.data(), experts);
  if (training && options_.gate_noise > 0) {
    for (float& l : logits) l += options_.gate_noise * noise_.Normal();
  }
  gate_out_ = TopKGate(logits.data(), tokens, experts, options_.top_k, options_.normalize_gate);
  status_ = Route();
  if (!status_.ok()) return zeros();
  const int64_t capacity = routing_.capacity;

  // Load balance: E * sum_e mean_t(p[t, e]) * fraction of tokens whose top-1 is e.
  top1_fraction_.assign(experts, 0.0f);
  std::vector<double> mean_prob(experts, 0.0);
  for (int64_t t = 0; t < tokens; ++t) {
    top1_fraction_[gate_out_.expert[t * options_.top_k]] += 1.0f / static_cast<float>(tokens);
    for (int e = 0; e < experts; ++e) mean_prob[e] += gate_out_.probs[t * experts + e];
  }
  double aux = 0.0;
  for (int e = 0; e < experts; ++e) aux += mean_prob[e] / tokens * top1_fraction_[e];
  aux_loss_ = static_cast<float>(aux * experts);

  Tensor slots = Tensor::Empty({experts, capacity, dim_});
  expert_out_ = Tensor::Empty({experts, capacity, dim_});
  Encode(routing_, input.data(), dim_, slots.data());
  if (!RunExperts(slots, expert_out_, training)) return zeros();
  Decode(routing_, expert_out_.data(), dim_, output.data());
  if (training) {
    input_ = input;
  } else {
    expert_out_ = Tensor();
  }
  return output;
}

void MoeLayer::GateBackward(const float* grad_gate, float* grad_logits) const {
  const int64_t tokens = routing_.tokens;
  const int experts = options_.experts;
  const int k = routing_.k;
  const float aux_scale = loss_weight_ * options_.aux_loss_weight * static_cast<float>(experts) /
                          static_cast<float>(tokens);
  // The load-balancing loss's gradient, the same for every token (the top-1
  // fractions are constants).
  std::vector<float> aux_grad(experts);
  for (int e = 0; e < experts; ++e) aux_grad[e] = aux_scale * top1_fraction_[e];
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    const float* p = gate_out_.probs.data() + t * experts;
    // d(loss)/d(probs) first, in this token's row of grad_logits.
    float* dp = grad_logits + t * experts;
    std::fill(dp, dp + experts, 0.0f);
    // Through the top-k weights (and their normalisation over the k chosen).
    const float* dg = grad_gate + t * k;
    const int32_t* chosen = gate_out_.expert.data() + t * k;
    if (options_.normalize_gate) {
      float sum = 0.0f, weighted = 0.0f;
      for (int i = 0; i < k; ++i) sum += p[chosen[i]];
      for (int i = 0; i < k; ++i) weighted += dg[i] * gate_out_.gate[t * k + i];
      for (int i = 0; i < k; ++i) dp[chosen[i]] += (dg[i] - weighted) / sum;
    } else {
      for (int i = 0; i < k; ++i) dp[chosen[i]] += dg[i];
    }
    for (int e = 0; e < experts; ++e) dp[e] += aux_grad[e];
    // Softmax: dz = p * (dp - <p, dp>).
    float dot = 0.0f;
    for (int e = 0; e < experts; ++e) dot += p[e] * dp[e];
    for (int e = 0; e < experts; ++e) dp[e] = p[e] * (dp[e] - dot);
  }
}

Tensor MoeLayer::Backward(const Tensor& grad_output, bool need_input_grad) {
  const int64_t tokens = routing_.tokens;
  if (!status_.ok()) return need_input_grad ? Tensor::Zeros({tokens, dim_}) : Tensor();
  STRATA_CHECK(input_.defined(), "MoeLayer::Backward without a training Forward");
  const int experts = options_.experts;
  const int64_t capacity = routing_.capacity;
  Tensor grad_out = Tensor::Empty({experts, capacity, dim_});
  std::vector<float> grad_gate(static_cast<size_t>(tokens * routing_.k));
  DecodeBackward(routing_, grad_output.data(), expert_out_.data(), dim_, grad_out.data(),
                 grad_gate.data());

  Tensor grad_slots = Tensor::Empty({experts, capacity, dim_});
  if (parallel_ != nullptr) {
    status_ = parallel_->Backward(grad_out, grad_slots);
    if (!status_.ok()) {
      input_ = expert_out_ = Tensor();
      return need_input_grad ? Tensor::Zeros({tokens, dim_}) : Tensor();
    }
  } else {
    experts_->Backward(grad_out, experts_saved_, grad_slots, /*accumulate=*/false);
  }
  experts_saved_ = ExpertActivations();

  std::vector<float> grad_logits(static_cast<size_t>(tokens * experts));
  GateBackward(grad_gate.data(), grad_logits.data());
  Sgemm('T', 'N', experts, dim_, tokens, 1.0f, grad_logits.data(), experts, input_.data(), dim_,
        0.0f, gate_.grad.data(), dim_);
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = Tensor::Empty({tokens, dim_});
    EncodeBackward(routing_, grad_slots.data(), dim_, grad_input.data());
    Sgemm('N', 'N', tokens, dim_, experts, 1.0f, grad_logits.data(), experts, gate_.value.data(),
          dim_, 1.0f, grad_input.data(), dim_);
  }
  input_ = expert_out_ = Tensor();
  return grad_input;
}

}  // namespace strata::moe
