#include "moe/moe_layer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "core/ops/backend.h"
#include "core/status.h"

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
                                                           const MoeOptions& o,
                                                           const Backend& backend) {
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
  return std::unique_ptr<MoeLayer>(new MoeLayer(std::move(name), input_shape, o, backend));
}

MoeLayer::MoeLayer(std::string name, const Shape& input_shape, const MoeOptions& o,
                   const Backend& backend)
    : Layer(std::move(name), input_shape),
      backend_(backend),
      options_(o),
      dim_(input_shape[0]),
      experts_(std::make_unique<ExpertFfn>(this->name(), o.experts, dim_, o.hidden,
                                           /*output_bias=*/true, backend)),
      noise_(o.noise_seed) {
  gate_ = ZeroParameter(this->name() + ".gate", {o.experts, dim_}, backend);
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
  if (backend_.device() != Device::kCpu) {
    return absl::FailedPreconditionError(
        absl::StrCat("moe ", name(), ": an expert group computes on the host (cpu), this layer on ",
                     DeviceName(backend_.device())));
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

absl::Status MoeLayer::Route(int64_t tokens) {
  const int experts = options_.experts;
  // The need on the host: free there; on a device a wait, taken only when
  // the capacity depends on it (f <= 0).
  const bool sized_by_need = options_.capacity.factor <= 0;
  std::vector<int64_t> need;
  if (sized_by_need || need_.device() == Device::kCpu) {
    STRATA_ASSIGN_OR_RETURN(const Tensor host, ToHost(need_));
    need.assign(host.i32_data(), host.i32_data() + experts);
  }
  int64_t largest = sized_by_need ? *std::max_element(need.begin(), need.end()) : 0;
  if (parallel_ != nullptr && inference_replica_ == nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::tie(largest, tokens), parallel_->AgreeCapacity(largest, tokens));
  }
  capacity_ = CapacityFor(options_.capacity, tokens, experts, options_.top_k, largest);
  padded_ = need.empty();
  used_.assign(experts, capacity_);
  for (size_t e = 0; e < need.size(); ++e) used_[e] = std::min(need[e], capacity_);
  return absl::OkStatus();
}

absl::StatusOr<Routing> MoeLayer::routing() const {
  if (!expert_.defined()) {
    return absl::FailedPreconditionError(absl::StrCat("moe ", name(), ": no Forward yet"));
  }
  STRATA_ASSIGN_OR_RETURN(const Tensor expert, ToHost(expert_));
  STRATA_ASSIGN_OR_RETURN(const Tensor rank, ToHost(rank_));
  STRATA_ASSIGN_OR_RETURN(const Tensor gate, ToHost(gate_weights_));
  STRATA_ASSIGN_OR_RETURN(const Tensor need, ToHost(need_));
  Routing r;
  r.tokens = expert.dim(0);
  r.experts = options_.experts;
  r.k = static_cast<int>(expert.dim(1));
  r.capacity = capacity_;
  r.expert.assign(expert.i32_data(), expert.i32_data() + expert.numel());
  r.gate.assign(gate.data(), gate.data() + gate.numel());
  for (int64_t c = 0; c < rank.numel(); ++c) {
    const int32_t at = rank.i32_data()[c];
    r.slot.push_back(at < capacity_ ? at : -1);
  }
  for (int e = 0; e < r.experts; ++e) {
    const int64_t received = need.i32_data()[e];
    r.used.push_back(std::min(received, capacity_));
    r.dropped += received - r.used.back();
  }
  return r;
}

absl::StatusOr<float> MoeLayer::aux_loss() const {
  if (!load_.defined()) {
    return absl::FailedPreconditionError(absl::StrCat("moe ", name(), ": no Forward yet"));
  }
  // E * sum_e mean_t(p[t, e]) * fraction of tokens whose top-1 is e.
  STRATA_ASSIGN_OR_RETURN(const Tensor load, ToHost(load_));
  const int experts = options_.experts;
  double aux = 0.0;
  for (int e = 0; e < experts; ++e) aux += double{load.data()[e]} * load.data()[experts + e];
  return static_cast<float>(aux * experts);
}

bool MoeLayer::RunExperts(const Tensor& slots, const Tensor& out, bool training) {
  if (parallel_ == nullptr) {
    experts_->Forward(slots, used_, out, &experts_saved_);
  } else if (!training && inference_replica_ != nullptr) {
    inference_replica_->Forward(slots, used_, out, &experts_saved_);
  } else {
    status_ = parallel_->Forward(slots, used_, out, training);
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
  const int k = options_.top_k;
  Tensor output = backend_.Empty({tokens, dim_});
  // A failed group: zeros and no more work (see the header).
  auto zeros = [&] {
    STRATA_CHECK_OK(backend_.Fill(0.0f, output));
    return output;
  };
  if (!status_.ok()) return zeros();
  if (training) inference_replica_ = nullptr;
  // Gate in fp32: logits = x G^T, plus training noise (drawn on the host:
  // the same on every device).
  Tensor logits = backend_.Empty({tokens, experts});
  STRATA_CHECK_OK(backend_.Gemm(false, true, 1.0f, input, gate_.value, 0.0f, logits));
  if (training && options_.gate_noise > 0) {
    Tensor noise = Tensor::Empty({tokens, experts});
    for (int64_t i = 0; i < noise.numel(); ++i) {
      noise.data()[i] = options_.gate_noise * noise_.Normal();
    }
    absl::StatusOr<Tensor> on_device = ToDevice(backend_, noise);
    STRATA_CHECK_OK(on_device.status());
    STRATA_CHECK_OK(backend_.Add(logits, *on_device, logits));
  }
  probs_ = backend_.Empty({tokens, experts});
  expert_ = backend_.Empty({tokens, k}, DType::kI32);
  gate_weights_ = backend_.Empty({tokens, k});
  rank_ = backend_.Empty({tokens, k}, DType::kI32);
  need_ = backend_.Empty({experts}, DType::kI32);
  load_ = backend_.Empty({2, experts});
  STRATA_CHECK_OK(
      backend_.TopKGate(logits, options_.normalize_gate, probs_, expert_, gate_weights_));
  STRATA_CHECK_OK(backend_.RankChoices(probs_, expert_, options_.batch_prioritized, rank_, need_));
  STRATA_CHECK_OK(backend_.GateLoad(probs_, expert_, load_));
  status_ = Route(tokens);
  if (!status_.ok()) return zeros();

  Tensor slots = backend_.Empty({experts, capacity_, dim_});
  if (padded_) STRATA_CHECK_OK(backend_.Fill(0.0f, slots));
  expert_out_ = backend_.Empty({experts, capacity_, dim_});
  STRATA_CHECK_OK(backend_.DispatchTokens(expert_, rank_, input, slots));
  if (!RunExperts(slots, expert_out_, training)) return zeros();
  STRATA_CHECK_OK(backend_.CombineTokens(expert_, rank_, gate_weights_, expert_out_, output));
  if (training) {
    input_ = input;
  } else {
    expert_out_ = Tensor();
  }
  return output;
}

Tensor MoeLayer::Backward(const Tensor& grad_output, bool need_input_grad) {
  const int64_t tokens = expert_.defined() ? expert_.dim(0) : 0;
  auto zero_input_grad = [&] {
    input_ = expert_out_ = Tensor();
    return need_input_grad ? backend_.Zeros({tokens, dim_}) : Tensor();
  };
  if (!status_.ok()) return zero_input_grad();
  STRATA_CHECK(input_.defined(), "MoeLayer::Backward without a training Forward");
  const int experts = options_.experts;
  // Rows no choice reaches must hold zeros where the experts compute them.
  Tensor grad_out = backend_.Empty({experts, capacity_, dim_});
  if (padded_) STRATA_CHECK_OK(backend_.Fill(0.0f, grad_out));
  Tensor grad_gate = backend_.Empty(expert_.shape());
  STRATA_CHECK_OK(backend_.CombineTokensBackward(expert_, rank_, gate_weights_, grad_output,
                                                 expert_out_, grad_out, grad_gate));

  Tensor grad_slots = backend_.Empty({experts, capacity_, dim_});
  if (parallel_ != nullptr) {
    status_ = parallel_->Backward(grad_out, grad_slots);
    if (!status_.ok()) return zero_input_grad();
  } else {
    experts_->Backward(grad_out, experts_saved_, grad_slots, /*accumulate=*/false);
  }
  experts_saved_ = ExpertActivations();

  // The load-balancing loss's gradient with respect to every token's
  // probabilities: loss weight * aux weight * E / T * top-1 fraction (the
  // fractions are constants).
  Tensor prob_grad = backend_.Empty({experts});
  STRATA_CHECK_OK(backend_.Copy(load_.Slice(1, 2).View({experts}), prob_grad));
  STRATA_CHECK_OK(backend_.Scale(loss_weight_ * options_.aux_loss_weight *
                                     static_cast<float>(experts) / static_cast<float>(tokens),
                                 prob_grad));
  Tensor grad_logits = backend_.Empty({tokens, experts});
  STRATA_CHECK_OK(backend_.TopKGateBackward(probs_, expert_, gate_weights_, grad_gate, prob_grad,
                                            options_.normalize_gate, grad_logits));
  STRATA_CHECK_OK(backend_.Gemm(true, false, 1.0f, grad_logits, input_, 0.0f, gate_.grad));
  Tensor grad_input;
  if (need_input_grad) {
    grad_input = backend_.Empty({tokens, dim_});
    STRATA_CHECK_OK(backend_.CombineTokens(expert_, rank_, Tensor(), grad_slots, grad_input));
    STRATA_CHECK_OK(backend_.Gemm(false, false, 1.0f, grad_logits, gate_.value, 1.0f, grad_input));
  }
  input_ = expert_out_ = Tensor();
  return grad_input;
}

}  // namespace strata::moe
