#include "core/optim/optimizer.h"

#include "absl/strings/str_cat.h"

namespace strata {

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
    UpdateRule rule;
    rule.kind = UpdateKind::kSgd;
    rule.momentum = c.momentum;
    rule.nesterov = c.nesterov;
    rule.weight_decay = c.weight_decay;
    return std::unique_ptr<Optimizer>(new Optimizer(c, rule));
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
    UpdateRule rule;
    rule.kind = c.type == "adamw" ? UpdateKind::kAdamW : UpdateKind::kAdam;
    rule.weight_decay = c.weight_decay;
    rule.beta1 = c.beta1;
    rule.beta2 = c.beta2;
    rule.epsilon = c.epsilon;
    return std::unique_ptr<Optimizer>(new Optimizer(c, rule));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.type: unknown optimizer \"", c.type, "\" (use sgd, adam or adamw)"));
}

}  // namespace strata
