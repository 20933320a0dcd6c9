#include "moe/moe_layer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/status.h"
#include "moe/dispatch.h"

namespace strata::moe {
namespace {

Parameter MakeParameter(const std::string& name, Shape shape) {
  Parameter p;
  p.name = name;
  p.value = Tensor::Zeros(shape);
  p.grad = Tensor::Zeros(std::move(shape));
  return p;
}

void FillUniform(Tensor& t, Rng& rng, float bound) {
  float* v = t.data();
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = rng.Uniform(-bound, bound);
}

// out[r, :] += bias for the first `rows` rows of a {rows, cols} block.
void AddBias(float* out, const float* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

// sum[:] = column sums of a {rows, cols} block.
void ColumnSums(const float* in, float* sum, int64_t rows, int64_t cols) {
  std::memset(sum, 0, static_cast<size_t>(cols) * sizeof(float));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) sum[c] += row[c];
  }
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
  if (o.top_k < 1 || o.top_k > o.experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("moe top_k must be in [1, experts = ", o.experts, "], got ", o.top_k));
  }
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
    : Layer(std::move(name), input_shape), options_(o), dim_(input_shape[0]), noise_(o.noise_seed) {
  const int64_t e = o.experts;
  gate_ = MakeParameter(this->name() + ".gate", {e, dim_});
  w1_ = MakeParameter(this->name() + ".w1", {e, dim_, o.hidden});
  b1_ = MakeParameter(this->name() + ".b1", {e, o.hidden});
  w2_ = MakeParameter(this->name() + ".w2", {e, o.hidden, dim_});
  b2_ = MakeParameter(this->name() + ".b2", {e, dim_});
}

void MoeLayer::InitParameters(Rng& rng) {
  const float in_bound = 1.0f / std::sqrt(static_cast<float>(dim_));
  const float hidden_bound = 1.0f / std::sqrt(static_cast<float>(options_.hidden));
  FillUniform(gate_.value, rng, in_bound);
  FillUniform(w1_.value, rng, in_bound);
  FillUniform(b1_.value, rng, in_bound);
  FillUniform(w2_.value, rng, hidden_bound);
  FillUniform(b2_.value, rng, hidden_bound);
}

int64_t MoeLayer::ForwardFlopsPerSample() const {
  return 2 * dim_ * options_.experts + options_.top_k * 4 * dim_ * options_.hidden;
}

absl::Status MoeLayer::set_top_k(int k) {
  if (k < 1 || k > options_.experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("moe top_k must be in [1, experts = ", options_.experts, "], got ", k));
  }
  options_.top_k = k;
  return absl::OkStatus();
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
  const int64_t hidden = options_.hidden;
  // Gate in fp32: logits = x G^T, plus training noise.
  std::vector<float> logits(static_cast<size_t>(tokens * experts));
  Sgemm('N', 'T', tokens, experts, dim_, 1.0f, input.data(), dim_, gate_.value.data(), dim_, 0.0f,
        logits.data(), experts);
  if (training && options_.gate_noise > 0) {
    for (float& l : logits) l += options_.gate_noise * noise_.Normal();
  }
  gate_out_ = TopKGate(logits.data(), tokens, experts, options_.top_k, options_.normalize_gate);
  routing_ = AssignSlots(gate_out_, experts, options_.capacity, options_.batch_prioritized);
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

  slots_ = Tensor::Empty({experts, capacity, dim_});
  hidden_ = Tensor::Empty({experts, capacity, hidden});
  expert_out_ = Tensor::Empty({experts, capacity, dim_});
  Encode(routing_, input.data(), dim_, slots_.data());
  for (int e = 0; e < experts; ++e) {
    const int64_t rows = routing_.used[e];
    if (rows == 0) continue;  // padded slots hold no token: nothing to compute
    const float* x = slots_.data() + e * capacity * dim_;
    float* h = hidden_.data() + e * capacity * hidden;
    float* y = expert_out_.data() + e * capacity * dim_;
    Sgemm('N', 'N', rows, hidden, dim_, 1.0f, x, dim_, w1_.value.data() + e * dim_ * hidden, hidden,
          0.0f, h, hidden);
    AddBias(h, b1_.value.data() + e * hidden, rows, hidden);
    for (int64_t i = 0; i < rows * hidden; ++i) h[i] = std::max(h[i], 0.0f);
    Sgemm('N', 'N', rows, dim_, hidden, 1.0f, h, hidden, w2_.value.data() + e * hidden * dim_, dim_,
          0.0f, y, dim_);
    AddBias(y, b2_.value.data() + e * dim_, rows, dim_);
  }
  Tensor output = Tensor::Empty({tokens, dim_});
  Decode(routing_, expert_out_.data(), dim_, output.data());
  if (training) {
    input_ = input;
  } else {
    slots_ = hidden_ = expert_out_ = Tensor();
  }
  return output;
}

void MoeLayer::GateBackward(const float* grad_gate, float* grad_logits) const {
  const int64_t tokens = routing_.tokens;
  const int experts = options_.experts;
  const int k = routing_.k;
  const float aux_scale =
      options_.aux_loss_weight * static_cast<float>(experts) / static_cast<float>(tokens);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tokens; ++t) {
    const float* p = gate_out_.probs.data() + t * experts;
    std::vector<float> dp(experts, 0.0f);
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
    // Through the load-balancing loss (the top-1 fractions are constants).
    for (int e = 0; e < experts; ++e) dp[e] += aux_scale * top1_fraction_[e];
    // Softmax: dz = p * (dp - <p, dp>).
    float dot = 0.0f;
    for (int e = 0; e < experts; ++e) dot += p[e] * dp[e];
    for (int e = 0; e < experts; ++e) grad_logits[t * experts + e] = p[e] * (dp[e] - dot);
  }
}

Tensor MoeLayer::Backward(const Tensor& grad_output, bool need_input_grad) {
  STRATA_CHECK(input_.defined(), "MoeLayer::Backward without a training Forward");
  const int64_t tokens = routing_.tokens;
  const int experts = options_.experts;
  const int64_t hidden = options_.hidden;
  const int64_t capacity = routing_.capacity;
  Tensor grad_out = Tensor::Empty({experts, capacity, dim_});
  std::vector<float> grad_gate(static_cast<size_t>(tokens * routing_.k));
  DecodeBackward(routing_, grad_output.data(), expert_out_.data(), dim_, grad_out.data(),
                 grad_gate.data());

  Tensor grad_slots = Tensor::Empty({experts, capacity, dim_});
  Tensor grad_hidden = Tensor::Empty({capacity, hidden});
  for (int e = 0; e < experts; ++e) {
    const int64_t rows = routing_.used[e];
    float* dw1 = w1_.grad.data() + e * dim_ * hidden;
    float* db1 = b1_.grad.data() + e * hidden;
    float* dw2 = w2_.grad.data() + e * hidden * dim_;
    float* db2 = b2_.grad.data() + e * dim_;
    if (rows == 0) {  // an expert without tokens gets zero gradients
      std::memset(dw1, 0, static_cast<size_t>(dim_ * hidden) * sizeof(float));
      std::memset(db1, 0, static_cast<size_t>(hidden) * sizeof(float));
      std::memset(dw2, 0, static_cast<size_t>(hidden * dim_) * sizeof(float));
      std::memset(db2, 0, static_cast<size_t>(dim_) * sizeof(float));
      continue;
    }
    const float* x = slots_.data() + e * capacity * dim_;
    const float* h = hidden_.data() + e * capacity * hidden;
    const float* dy = grad_out.data() + e * capacity * dim_;
    float* dh = grad_hidden.data();
    // Second linear: dW2 = h^T dy, db2 = sum dy, dh = dy W2^T (through ReLU).
    Sgemm('T', 'N', hidden, dim_, rows, 1.0f, h, hidden, dy, dim_, 0.0f, dw2, dim_);
    ColumnSums(dy, db2, rows, dim_);
    Sgemm('N', 'T', rows, hidden, dim_, 1.0f, dy, dim_, w2_.value.data() + e * hidden * dim_, dim_,
          0.0f, dh, hidden);
    for (int64_t i = 0; i < rows * hidden; ++i) {
      if (h[i] <= 0.0f) dh[i] = 0.0f;
    }
    // First linear: dW1 = x^T dh, db1 = sum dh, dx = dh W1^T.
    Sgemm('T', 'N', dim_, hidden, rows, 1.0f, x, dim_, dh, hidden, 0.0f, dw1, hidden);
    ColumnSums(dh, db1, rows, hidden);
    Sgemm('N', 'T', rows, dim_, hidden, 1.0f, dh, hidden, w1_.value.data() + e * dim_ * hidden,
          hidden, 0.0f, grad_slots.data() + e * capacity * dim_, dim_);
  }

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
  input_ = slots_ = hidden_ = expert_out_ = Tensor();
  return grad_input;
}

}  // namespace strata::moe
