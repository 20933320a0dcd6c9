#include "moe/expert_ffn.h"

#include <cmath>

#include "core/ops/backend.h"
#include "core/status.h"

namespace strata::moe {
namespace {

// Expert e's {rows, cols} block of a {E, C, cols} buffer (its first `rows`
// of C rows), or of a {E, rows, cols} parameter.
Tensor ExpertRows(const Tensor& t, int e, int64_t rows) {
  const int64_t per_expert = t.numel() / t.dim(0);
  const int64_t cols = t.dim(t.rank() - 1);
  return t.Slice(e, e + 1).View({per_expert / cols, cols}).Slice(0, rows);
}

// Expert e's row of an {E, cols} bias.
Tensor ExpertBias(const Tensor& t, int e) { return t.Slice(e, e + 1).View({t.dim(1)}); }

}  // namespace

ExpertFfn::ExpertFfn(const std::string& name_prefix, int experts, int64_t dim, int64_t hidden,
                     bool output_bias, const Backend& backend)
    : backend_(backend), experts_(experts), dim_(dim), hidden_(hidden), output_bias_(output_bias) {
  w1_ = ZeroParameter(name_prefix + ".w1", {experts, dim, hidden}, backend);
  b1_ = ZeroParameter(name_prefix + ".b1", {experts, hidden}, backend);
  w2_ = ZeroParameter(name_prefix + ".w2", {experts, hidden, dim}, backend);
  if (output_bias_) b2_ = ZeroParameter(name_prefix + ".b2", {experts, dim}, backend);
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
  saved->hidden = backend_.Empty({experts_, capacity, hidden_});
  for (int e = 0; e < experts_; ++e) {
    const int64_t rows = used[e];
    if (rows == 0) continue;  // padded slots hold no token: nothing to compute
    const Tensor x = ExpertRows(slots, e, rows);
    const Tensor h = ExpertRows(saved->hidden, e, rows);
    const Tensor y = ExpertRows(out, e, rows);
    STRATA_CHECK_OK(backend_.BroadcastRows(ExpertBias(b1_.value, e), h));
    STRATA_CHECK_OK(backend_.Gemm(false, false, 1.0f, x, ExpertRows(w1_.value, e, dim_), 1.0f, h));
    STRATA_CHECK_OK(backend_.Relu(h, h));
    if (output_bias_) {
      STRATA_CHECK_OK(backend_.BroadcastRows(ExpertBias(b2_.value, e), y));
    }
    STRATA_CHECK_OK(backend_.Gemm(false, false, 1.0f, h, ExpertRows(w2_.value, e, hidden_),
                                  output_bias_ ? 1.0f : 0.0f, y));
  }
}

void ExpertFfn::Backward(const Tensor& grad_out, const ExpertActivations& saved,
                         const Tensor& grad_slots, bool accumulate) {
  STRATA_CHECK(saved.slots.defined(), "ExpertFfn::Backward without Forward");
  const float beta = accumulate ? 1.0f : 0.0f;
  const int64_t capacity = saved.slots.numel() / (experts_ * dim_);
  const Tensor grad_hidden = backend_.Empty({capacity, hidden_});
  for (int e = 0; e < experts_; ++e) {
    const int64_t rows = saved.used[e];
    const Tensor dw1 = ExpertRows(w1_.grad, e, dim_);
    const Tensor db1 = ExpertBias(b1_.grad, e);
    const Tensor dw2 = ExpertRows(w2_.grad, e, hidden_);
    const Tensor db2 = output_bias_ ? ExpertBias(b2_.grad, e) : Tensor();
    if (rows == 0) {  // an expert without tokens adds nothing
      if (!accumulate) {
        for (const Tensor* g : {&dw1, &db1, &dw2, &db2}) {
          if (g->defined()) STRATA_CHECK_OK(backend_.Fill(0.0f, *g));
        }
      }
      continue;
    }
    const Tensor x = ExpertRows(saved.slots, e, rows);
    const Tensor h = ExpertRows(saved.hidden, e, rows);
    const Tensor dy = ExpertRows(grad_out, e, rows);
    const Tensor dh = grad_hidden.Slice(0, rows);
    // Second linear: dW2 = h^T dy, db2 = sum dy, dh = dy W2^T (through ReLU).
    STRATA_CHECK_OK(backend_.Gemm(true, false, 1.0f, h, dy, beta, dw2));
    if (db2.defined()) STRATA_CHECK_OK(backend_.SumRows(dy, db2, accumulate));
    STRATA_CHECK_OK(
        backend_.Gemm(false, true, 1.0f, dy, ExpertRows(w2_.value, e, hidden_), 0.0f, dh));
    STRATA_CHECK_OK(backend_.ReluBackward(h, dh, dh));
    // First linear: dW1 = x^T dh, db1 = sum dh, dx = dh W1^T.
    STRATA_CHECK_OK(backend_.Gemm(true, false, 1.0f, x, dh, beta, dw1));
    STRATA_CHECK_OK(backend_.SumRows(dh, db1, accumulate));
    STRATA_CHECK_OK(backend_.Gemm(false, true, 1.0f, dh, ExpertRows(w1_.value, e, dim_), 0.0f,
                                  ExpertRows(grad_slots, e, rows)));
  }
}

}  // namespace strata::moe
