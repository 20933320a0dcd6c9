#include "core/optim/optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace strata {
namespace {

// PyTorch's SGD: g += wd*p; buf = momentum*buf + g; p -= lr * (nesterov ? g + momentum*buf : buf).
class Sgd final : public Optimizer {
 public:
  explicit Sgd(OptimizerConfig config) : Optimizer(std::move(config)) {}
  int state_slots() const override { return config_.momentum > 0.0f ? 1 : 0; }
  void Update(float* p, const float* g, float* state, int64_t n, float lr, int64_t step,
              float grad_scale) const override {
    const float wd = config_.weight_decay;
    const float mu = config_.momentum;
    const float gs = grad_scale;
    if (mu == 0.0f) {
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
      for (int64_t i = 0; i < n; ++i) p[i] -= lr * (g[i] * gs + wd * p[i]);
      return;
    }
    float* buf = state;
    const bool nesterov = config_.nesterov;
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float d = g[i] * gs + wd * p[i];
      buf[i] = mu * buf[i] + d;
      p[i] -= lr * (nesterov ? d + mu * buf[i] : buf[i]);
    }
  }
};

// Adam (L2 weight decay folded into the gradient) and AdamW (decoupled decay).
class Adam final : public Optimizer {
 public:
  Adam(OptimizerConfig config, bool decoupled)
      : Optimizer(std::move(config)), decoupled_(decoupled) {}
  int state_slots() const override { return 2; }
  void Update(float* p, const float* g, float* state, int64_t n, float lr, int64_t step,
              float grad_scale) const override {
    const float gs = grad_scale;
    const float b1 = config_.beta1;
    const float b2 = config_.beta2;
    const float eps = config_.epsilon;
    const float wd = config_.weight_decay;
    const float bias1 = 1.0f - static_cast<float>(std::pow(b1, step));
    const float bias2 = 1.0f - static_cast<float>(std::pow(b2, step));
    const float step_size = lr / bias1;
    const float inv_sqrt_bias2 = 1.0f / std::sqrt(bias2);
    const bool decoupled = decoupled_;
    float* m = state;
    float* v = state + n;
#pragma omp parallel for simd if (n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      float d = g[i] * gs;
      if (decoupled) {
        p[i] -= lr * wd * p[i];
      } else {
        d += wd * p[i];
      }
      m[i] = b1 * m[i] + (1.0f - b1) * d;
      v[i] = b2 * v[i] + (1.0f - b2) * d * d;
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_bias2 + eps);
    }
  }

 private:
  bool decoupled_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(const OptimizerConfig& c) {
  if (!(c.lr > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("optimizer.lr must be > 0, got ", c.lr));
  }
  if (!(c.weight_decay >= 0.0f)) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer.weight_decay must be >= 0, got ", c.weight_decay));
  }
  if (c.type == "sgd") {
    if (!(c.momentum >= 0.0f && c.momentum < 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer.momentum must be in [0, 1), got ", c.momentum));
    }
    if (c.nesterov && c.momentum == 0.0f) {
      return absl::InvalidArgumentError("optimizer.nesterov needs optimizer.momentum > 0");
    }
    return std::unique_ptr<Optimizer>(new Sgd(c));
  }
  if (c.type == "adam" || c.type == "adamw") {
    if (!(c.beta1 >= 0.0f && c.beta1 < 1.0f) || !(c.beta2 >= 0.0f && c.beta2 < 1.0f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer.beta1 and beta2 must be in [0, 1), got ", c.beta1, " and ", c.beta2));
    }
    if (!(c.epsilon > 0.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer.epsilon must be > 0, got ", c.epsilon));
    }
    return std::unique_ptr<Optimizer>(new Adam(c, c.type == "adamw"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.type: unknown optimizer \"", c.type, "\" (use sgd, adam or adamw)"));
}

}  // namespace strata
