#include "scheduler/secbad/observation_model.h"

#include <algorithm>
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

absl::StatusOr<NormalGammaModel> NormalGammaModel::Create(std::vector<NormalGammaPrior> priors,
                                                          OutlierModel outliers) {
  if (priors.empty()) {
    return absl::InvalidArgumentError("Normal-Gamma observation model: no dimension given");
  }
  for (size_t d = 0; d < priors.size(); ++d) {
    const NormalGammaPrior& p = priors[d];
    if (!(p.strength > 0) || !(p.shape > 1) || !(p.rate > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("Normal-Gamma observation model: dimension ", d, " has strength ",
                       p.strength, ", shape ", p.shape, " and rate ", p.rate,
                       " (strength and rate must be positive, the shape above 1)"));
    }
  }
  if (!(outliers.rate >= 0 && outliers.rate < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Normal-Gamma observation model: the outlier rate must be in [0, 1), got ", outliers.rate));
  }
  if (outliers.rate > 0) {
    bool ranges = outliers.low.size() == priors.size() && outliers.high.size() == priors.size();
    for (size_t d = 0; ranges && d < priors.size(); ++d) {
      ranges = outliers.low[d] < outliers.high[d];
    }
    if (!ranges) {
      return absl::InvalidArgumentError(
          absl::StrCat("Normal-Gamma observation model: outliers need a range low < high for "
                       "each of the ",
                       priors.size(), " dimensions"));
    }
  }
  return NormalGammaModel(std::move(priors), std::move(outliers));
}

void NormalGammaModel::Reset(int window) {
  window_ = window;
  const size_t n = static_cast<size_t>(window + 1) * priors_.size();
  count_.assign(n, 0.0);
  sum_.assign(n, 0.0);
  sum_squares_.assign(n, 0.0);
  // The Student-t's normalising terms depend on the count alone.
  constant_.assign(n, 0.0);
  for (int c = 0; c <= window; ++c) {
    for (size_t d = 0; d < priors_.size(); ++d) {
      const double nu = 2 * priors_[d].shape + c;
      constant_[static_cast<size_t>(c) * priors_.size() + d] =
          std::lgamma((nu + 1) / 2) - std::lgamma(nu / 2) - 0.5 * std::log(nu * M_PI);
    }
  }
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

double NormalGammaModel::StudentLogDensity(int slot, const double* x) const {
  const size_t dims = priors_.size();
  double log_density = 0;
  for (size_t d = 0; d < dims; ++d) {
    if (std::isnan(x[d])) continue;  // not observed this step
    // Student-t with 2 alpha degrees of freedom, location mu, squared
    // scale beta (kappa + 1) / (alpha kappa).
    const Posterior q = PosteriorOf(slot, static_cast<int>(d));
    const double nu = 2 * q.shape;
    const double scale2 = q.rate * (q.strength + 1) / (q.shape * q.strength);
    const double z = x[d] - q.mean;
    // The normalising term from the table of whole counts, interpolated
    // where readings weighed as possible outliers left a fraction (the
    // term is smooth in the count; lgamma per slot would cost far more).
    const double count = std::min(count_[static_cast<size_t>(slot) * dims + d],
                                  static_cast<double>(window_));
    const size_t whole = static_cast<size_t>(count);
    const double fraction = count - static_cast<double>(whole);
    double normaliser = constant_[whole * dims + d];
    if (fraction > 0) {
      normaliser += fraction * (constant_[(whole + 1) * dims + d] - normaliser);
    }
    log_density +=
        normaliser - 0.5 * std::log(scale2) - (nu + 1) / 2 * std::log1p(z * z / (nu * scale2));
  }
  return log_density;
}

double NormalGammaModel::LogStrayDensity(const double* x) const {
  double log_density = std::log(outliers_.rate);
  for (int d = 0; d < dims(); ++d) {
    if (!std::isnan(x[d])) log_density -= std::log(outliers_.high[d] - outliers_.low[d]);
  }
  return log_density;
}

void NormalGammaModel::LogPredictive(const double* x, double* out) const {
  if (outliers_.rate == 0) {
    for (int s = 0; s <= window_; ++s) out[s] = StudentLogDensity(s, x);
  } else {
    // log((1 - rate) t + rate u); each slot's log((1 - rate) t) kept for
    // the Observe of the same x.
    const double stray = LogStrayDensity(x);
    const double log_kept = std::log1p(-outliers_.rate);
    kept_.resize(static_cast<size_t>(window_) + 1);
    kept_for_.assign(x, x + dims());
    for (int s = 0; s <= window_; ++s) {
      const double kept = log_kept + StudentLogDensity(s, x);
      kept_[s] = kept;
      const double top = std::max(kept, stray);
      out[s] = top + std::log(std::exp(kept - top) + std::exp(stray - top));
    }
  }
  last_work_ = window_ + 1;
}

void NormalGammaModel::Observe(const double* x) {
  const size_t dims = priors_.size();
  const bool weigh = outliers_.rate > 0;
  const double stray = weigh ? LogStrayDensity(x) : 0.0;
  const double log_kept = weigh ? std::log1p(-outliers_.rate) : 0.0;
  // The slots' log((1 - rate) t) of x, as LogPredictive left them when it
  // was asked about this x (NaN compares unequal: recomputed then).
  const bool known = weigh && kept_for_.size() == priors_.size() &&
                     std::equal(kept_for_.begin(), kept_for_.end(), x);
  // Slot s takes slot s - 1's observations and x: the last s observations.
  // With outliers, x counts in slot s as much as it is not an outlier to
  // slot s - 1's segment (its responsibility under the mixture), so a
  // stray reading does not widen the belief of a segment it does not fit.
  for (int s = window_; s >= 1; --s) {
    double weight = 1;
    if (weigh) {
      const double kept = known ? kept_[s - 1] : log_kept + StudentLogDensity(s - 1, x);
      weight = 1 / (1 + std::exp(stray - kept));
    }
    for (size_t d = 0; d < dims; ++d) {
      const size_t to = static_cast<size_t>(s) * dims + d;
      const size_t from = to - dims;
      const double w = std::isnan(x[d]) ? 0.0 : weight;
      count_[to] = count_[from] + w;
      sum_[to] = sum_[from] + (w > 0 ? w * x[d] : 0.0);
      sum_squares_[to] = sum_squares_[from] + (w > 0 ? w * x[d] * x[d] : 0.0);
    }
  }
  kept_for_.clear();
  last_work_ += weigh && !known ? 2 * window_ : window_;
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

namespace strata::secbad {

absl::StatusOr<GridContextModel> GridContextModel::Create(std::vector<GridDimension> dims) {
  if (dims.empty()) {
    return absl::InvalidArgumentError("grid context model: no dimension given");
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    GridDimension& dim = dims[d];
    const std::string where = absl::StrCat("grid context model: dimension ", d, ": ");
    const size_t grid = dim.contexts.size();
    const size_t symbols = dim.symbols.size();
    if (grid == 0 || symbols == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "needs at least one context value and one symbol"));
    }
    if (dim.likelihood.size() != grid) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the likelihood has ",
                                                     dim.likelihood.size(), " rows, not one per ",
                                                     "context value (", grid, ")"));
    }
    for (size_t g = 0; g < grid; ++g) {
      const std::vector<double>& row = dim.likelihood[g];
      if (row.size() != symbols) {
        return absl::InvalidArgumentError(absl::StrCat(where, "likelihood row ", g, " has ",
                                                       row.size(), " entries, not ", symbols));
      }
      double total = 0;
      for (double p : row) {
        if (!(p >= 0)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, "likelihood row ", g, " has the negative entry ", p));
        }
        total += p;
      }
      if (std::abs(total - 1) > 1e-6) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "likelihood row ", g, " sums to ", total, ", not 1"));
      }
    }
    if (dim.prior.empty()) dim.prior.assign(grid, 1.0);
    double mass = 0;
    for (double p : dim.prior) mass += p >= 0 ? p : -1e300;
    if (dim.prior.size() != grid || !(mass > 0)) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the prior must be ", grid,
                                                     " non-negative values with a positive sum"));
    }
    for (double& p : dim.prior) p /= mass;
  }
  return GridContextModel(std::move(dims));
}

GridContextModel::GridContextModel(std::vector<GridDimension> dims) : dims_(std::move(dims)) {
  for (const GridDimension& dim : dims_) {
    offset_.push_back(slot_size_);
    slot_size_ += dim.contexts.size();
  }
}

const double* GridContextModel::PosteriorOf(int slot, int d) const {
  return posterior_.data() + static_cast<size_t>(slot) * slot_size_ + offset_[d];
}

double* GridContextModel::PosteriorOf(int slot, int d) {
  return posterior_.data() + static_cast<size_t>(slot) * slot_size_ + offset_[d];
}

int GridContextModel::SymbolOf(int d, double x) const {
  const std::vector<double>& symbols = dims_[d].symbols;
  for (size_t k = 0; k < symbols.size(); ++k) {
    if (symbols[k] == x) return static_cast<int>(k);
  }
  return -1;  // NaN included: it equals nothing
}

void GridContextModel::Reset(int window) {
  window_ = window;
  posterior_.assign(static_cast<size_t>(window + 1) * slot_size_, 0.0);
  for (int s = 0; s <= window; ++s) {
    for (int d = 0; d < dims(); ++d) {
      std::copy(dims_[d].prior.begin(), dims_[d].prior.end(), PosteriorOf(s, d));
    }
  }
  last_work_ = 0;
}

void GridContextModel::LogPredictive(const double* x, double* out) const {
  std::fill(out, out + window_ + 1, 0.0);
  for (int d = 0; d < dims(); ++d) {
    const int k = SymbolOf(d, x[d]);
    if (k < 0) continue;
    const GridDimension& dim = dims_[d];
    const size_t grid = dim.contexts.size();
    for (int s = 0; s <= window_; ++s) {
      const double* p = PosteriorOf(s, d);
      double density = 0;
      for (size_t g = 0; g < grid; ++g) density += p[g] * dim.likelihood[g][k];
      out[s] += std::log(density);  // -inf: no value of the slot allows x
    }
  }
  last_work_ = window_ + 1;
}

void GridContextModel::Observe(const double* x) {
  for (int d = 0; d < dims(); ++d) {
    const int k = SymbolOf(d, x[d]);
    const GridDimension& dim = dims_[d];
    const size_t grid = dim.contexts.size();
    // Slot s takes slot s - 1's observations and x: the last s observations.
    for (int s = window_; s >= 1; --s) {
      const double* from = PosteriorOf(s - 1, d);
      double* to = PosteriorOf(s, d);
      if (k < 0) {
        std::copy(from, from + grid, to);
        continue;
      }
      double total = 0;
      for (size_t g = 0; g < grid; ++g) total += (to[g] = from[g] * dim.likelihood[g][k]);
      if (total > 0) {
        for (size_t g = 0; g < grid; ++g) to[g] /= total;
      } else {
        // No value allows the slot's observations: its predictive is 0
        // from now on; the prior stands in so beliefs stay defined.
        std::copy(dim.prior.begin(), dim.prior.end(), to);
      }
    }
  }
  last_work_ += window_;
}

ContextBelief GridContextModel::BeliefOf(int slot) const {
  ContextBelief belief;
  for (int d = 0; d < dims(); ++d) {
    const GridDimension& dim = dims_[d];
    const double* p = PosteriorOf(slot, d);
    double mean = 0, second = 0;
    for (size_t g = 0; g < dim.contexts.size(); ++g) {
      mean += p[g] * dim.contexts[g];
      second += p[g] * dim.contexts[g] * dim.contexts[g];
    }
    belief.mean.push_back(mean);
    belief.variance.push_back(std::max(0.0, second - mean * mean));
    belief.distribution.emplace_back(p, p + dim.contexts.size());
  }
  return belief;
}

}  // namespace strata::secbad
