#include "scheduler/secbad/observation_model.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace strata::secbad {

NormalGammaPrior NormalGammaPrior::For(double mean, double noise, double spread) {
  NormalGammaPrior p;
  p.mean = mean;
  p.shape = 2;
  p.rate = noise * noise * (p.shape - 1);  // E[noise variance] = noise^2
  // The prior standard deviation of the mean is about noise / sqrt(kappa).
  p.strength = std::min(1.0, (noise * noise) / (spread * spread));
  return p;
}

absl::StatusOr<NormalGammaModel> NormalGammaModel::Create(std::vector<NormalGammaPrior> priors) {
  if (priors.empty()) {
    return absl::InvalidArgumentError("Normal-Gamma observation model: no dimension given");
  }
  for (size_t d = 0; d < priors.size(); ++d) {
    const NormalGammaPrior& p = priors[d];
    if (!(p.strength > 0) || !(p.shape > 1) || !(p.rate > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Normal-Gamma observation model: dimension ", d, " has strength ", p.strength,
          ", shape ", p.shape, " and rate ", p.rate,
          " (strength and rate must be positive, the shape above 1)"));
    }
  }
  return NormalGammaModel(std::move(priors));
}

void NormalGammaModel::Reset(int window) {
  window_ = window;
  const size_t n = static_cast<size_t>(window + 1) * priors_.size();
  count_.assign(n, 0.0);
  sum_.assign(n, 0.0);
  sum_squares_.assign(n, 0.0);
  last_work_ = 0;
}

NormalGammaModel::Posterior NormalGammaModel::PosteriorOf(int slot, int d) const {
  const NormalGammaPrior& p = priors_[d];
  const size_t at = static_cast<size_t>(slot) * priors_.size() + d;
  const double n = count_[at];
  if (n == 0) return {p.mean, p.strength, p.shape, p.rate};
  const double average = sum_[at] / n;
  const double scatter = std::max(0.0, sum_squares_[at] - n * average * average);
  const double strength = p.strength + n;
  const double shift = average - p.mean;
  return {(p.strength * p.mean + sum_[at]) / strength, strength, p.shape + n / 2,
          p.rate + scatter / 2 + p.strength * n * shift * shift / (2 * strength)};
}

void NormalGammaModel::LogPredictive(const double* x, double* out) const {
  const int dims = this->dims();
  for (int s = 0; s <= window_; ++s) {
    double log_density = 0;
    for (int d = 0; d < dims; ++d) {
      if (std::isnan(x[d])) continue;  // not observed this step
      // Student-t with 2 alpha degrees of freedom, location mu, squared
      // scale beta (kappa + 1) / (alpha kappa).
      const Posterior q = PosteriorOf(s, d);
      const double nu = 2 * q.shape;
      const double scale2 = q.rate * (q.strength + 1) / (q.shape * q.strength);
      const double z = x[d] - q.mean;
      log_density += std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) -
                     0.5 * std::log(nu * M_PI * scale2) -
                     (nu + 1) / 2 * std::log1p(z * z / (nu * scale2));
    }
    out[s] = log_density;
  }
  last_work_ = window_ + 1;
}

void NormalGammaModel::Observe(const double* x) {
  const size_t dims = priors_.size();
  // Slot s takes slot s - 1's observations and x: the last s observations.
  for (int s = window_; s >= 1; --s) {
    for (size_t d = 0; d < dims; ++d) {
      const size_t to = static_cast<size_t>(s) * dims + d;
      const size_t from = to - dims;
      const bool seen = !std::isnan(x[d]);
      count_[to] = count_[from] + (seen ? 1 : 0);
      sum_[to] = sum_[from] + (seen ? x[d] : 0.0);
      sum_squares_[to] = sum_squares_[from] + (seen ? x[d] * x[d] : 0.0);
    }
  }
  last_work_ += window_;
}

ContextBelief NormalGammaModel::BeliefOf(int slot) const {
  ContextBelief belief;
  for (int d = 0; d < dims(); ++d) {
    const Posterior q = PosteriorOf(slot, d);
    belief.mean.push_back(q.mean);
    // The mean's marginal is a Student-t: variance beta / (kappa (alpha - 1)).
    belief.variance.push_back(q.rate / (q.strength * (q.shape - 1)));
  }
  return belief;
}

}  // namespace strata::secbad
