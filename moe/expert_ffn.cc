#include "moe/expert_ffn.h"

#include <cmath>
#include <cstring>

#include "core/ops/backend.h"
#include "core/ops/cpu/dnnl_runtime.h"
#include "core/ops/cpu/elementwise.h"
#include "core/status.h"

namespace strata::moe {
namespace {

// out[r, :] += bias for the first `rows` rows of a {rows, cols} block.
void AddBias(float* out, const float* bias, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * cols;
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

}  // namespace

ExpertFfn::ExpertFfn(const std::string& name_prefix, int experts, int64_t dim, int64_t hidden,
                     bool output_bias)
    : experts_(experts), dim_(dim), hidden_(hidden), output_bias_(output_bias) {
  w1_ = ZeroParameter(name_prefix + ".w1", {experts, dim, hidden}, HostBackend());
  b1_ = ZeroParameter(name_prefix + ".b1", {experts, hidden}, HostBackend());
  w2_ = ZeroParameter(name_prefix + ".w2", {experts, hidden, dim}, HostBackend());
  if (output_bias_) b2_ = ZeroParameter(name_prefix + ".b2", {experts, dim}, HostBackend());
}

std::vector<Parameter*> ExpertFfn::parameters() {
  if (output_bias_) return {&w1_, &b1_, &w2_, &b2_};
  return {&w1_, &b1_, &w2_};
}

void ExpertFfn::InitParameters(Rng& rng) {
  const float in_bound = 1.0f / std::sqrt(static_cast<float>(dim_));
  const float hidden_bound = 1.0f / std::sqrt(static_cast<float>(hidden_));
  FillUniform(w1_.value, rng, in_bound);
  FillUniform(b1_.value, rng, in_bound);
  FillUniform(w2_.value, rng, hidden_bound);
  STRATA_CHECK(output_bias_, "ExpertFfn::InitParameters on a hidden slice");
  FillUniform(b2_.value, rng, hidden_bound);
}

void ExpertFfn::Forward(const Tensor& slots, const std::vector<int64_t>& used, const Tensor& out,
                        ExpertActivations* saved) const {
  STRATA_CHECK(static_cast<int>(used.size()) == experts_, "ExpertFfn: one used count per expert");
  const int64_t capacity = slots.numel() / (experts_ * dim_);
  saved->slots = slots;
  saved->used = used;
  saved->hidden = Tensor::Empty({experts_, capacity, hidden_});
  for (int e = 0; e < experts_; ++e) {
    const int64_t rows = used[e];
    if (rows == 0) continue;  // padded slots hold no token: nothing to compute
    const float* x = slots.data() + e * capacity * dim_;
    float* h = saved->hidden.data() + e * capacity * hidden_;
    float* y = out.data() + e * capacity * dim_;
    Sgemm('N', 'N', rows, hidden_, dim_, 1.0f, x, dim_, w1_.value.data() + e * dim_ * hidden_,
          hidden_, 0.0f, h, hidden_);
    AddBias(h, b1_.value.data() + e * hidden_, rows, hidden_);
    ReluForward(h, h, rows * hidden_);
    Sgemm('N', 'N', rows, dim_, hidden_, 1.0f, h, hidden_, w2_.value.data() + e * hidden_ * dim_,
          dim_, 0.0f, y, dim_);
    if (output_bias_) AddBias(y, b2_.value.data() + e * dim_, rows, dim_);
  }
}

void ExpertFfn::Backward(const Tensor& grad_out, const ExpertActivations& saved,
                         const Tensor& grad_slots, bool accumulate) {
  STRATA_CHECK(saved.slots.defined(), "ExpertFfn::Backward without Forward");
  const int64_t capacity = saved.slots.numel() / (experts_ * dim_);
  const float beta = accumulate ? 1.0f : 0.0f;
  Tensor grad_hidden = Tensor::Empty({capacity, hidden_});
  for (int e = 0; e < experts_; ++e) {
    const int64_t rows = saved.used[e];
    float* dw1 = w1_.grad.data() + e * dim_ * hidden_;
    float* db1 = b1_.grad.data() + e * hidden_;
    float* dw2 = w2_.grad.data() + e * hidden_ * dim_;
    float* db2 = output_bias_ ? b2_.grad.data() + e * dim_ : nullptr;
    if (rows == 0) {  // an expert without tokens adds nothing
      if (!accumulate) {
        std::memset(dw1, 0, static_cast<size_t>(dim_ * hidden_) * sizeof(float));
        std::memset(db1, 0, static_cast<size_t>(hidden_) * sizeof(float));
        std::memset(dw2, 0, static_cast<size_t>(hidden_ * dim_) * sizeof(float));
        if (db2 != nullptr) std::memset(db2, 0, static_cast<size_t>(dim_) * sizeof(float));
      }
      continue;
    }
    const float* x = saved.slots.data() + e * capacity * dim_;
    const float* h = saved.hidden.data() + e * capacity * hidden_;
    const float* dy = grad_out.data() + e * capacity * dim_;
    float* dh = grad_hidden.data();
    // Second linear: dW2 = h^T dy, db2 = sum dy, dh = dy W2^T (through ReLU).
    Sgemm('T', 'N', hidden_, dim_, rows, 1.0f, h, hidden_, dy, dim_, beta, dw2, dim_);
    if (db2 != nullptr) SumRows(dy, db2, rows, dim_, accumulate);
    Sgemm('N', 'T', rows, hidden_, dim_, 1.0f, dy, dim_, w2_.value.data() + e * hidden_ * dim_,
          dim_, 0.0f, dh, hidden_);
    ReluBackward(h, dh, dh, rows * hidden_);
    // First linear: dW1 = x^T dh, db1 = sum dh, dx = dh W1^T.
    Sgemm('T', 'N', dim_, hidden_, rows, 1.0f, x, dim_, dh, hidden_, beta, dw1, hidden_);
    SumRows(dh, db1, rows, hidden_, accumulate);
    Sgemm('N', 'T', rows, dim_, hidden_, 1.0f, dh, hidden_, w1_.value.data() + e * dim_ * hidden_,
          hidden_, 0.0f, grad_slots.data() + e * capacity * dim_, dim_);
  }
}

}  // namespace strata::moe
