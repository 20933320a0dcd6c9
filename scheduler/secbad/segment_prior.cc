#include "scheduler/secbad/segment_prior.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace strata::secbad {

namespace {

// P(X >= x) for X ~ N(mean, stddev), to full relative precision in the tail.
double NormalUpperTail(double x, double mean, double stddev) {
  return 0.5 * std::erfc((x - mean) / (stddev * std::sqrt(2.0)));
}

}  // namespace

SegmentPrior SegmentPrior::FromProbabilities(std::vector<double> probability,
                                             std::string description) {
  SegmentPrior prior;
  double total = 0;
  for (double p : probability) total += p;
  for (double& p : probability) p /= total;
  prior.hazard_.resize(probability.size());
  double survival = 1.0;  // P(L >= r)
  for (size_t i = 0; i < probability.size(); ++i) {
    prior.hazard_[i] = survival > 1e-300 ? std::min(1.0, probability[i] / survival) : 1.0;
    survival -= probability[i];
  }
  if (!prior.hazard_.empty()) prior.hazard_.back() = 1.0;
  prior.probability_ = std::move(probability);
  prior.description_ = std::move(description);
  return prior;
}

absl::StatusOr<SegmentPrior> SegmentPrior::TruncatedNormal(double mean, double stddev,
                                                           int min_length, int longest) {
  const bool sound = stddev > 0 && std::isfinite(mean) && min_length >= 1 &&
                     mean + 4 * stddev >= min_length && mean + 10 * stddev <= kLongestSegment;
  if (sound && longest == 0) {
    longest = std::max(min_length, static_cast<int>(std::ceil(mean + 10 * stddev)));
  }
  if (!sound || longest < min_length || longest > kLongestSegment) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "truncated-normal segment prior: mean %g, sd %g, at least %d, at most %d: the sd must be "
        "positive, the shortest segment at least 1, the normal's bulk above it and its tail "
        "within %d",
        mean, stddev, min_length, longest, kLongestSegment));
  }
  // L = max(round(X), m): P(L >= r) is 1 for r <= m and P(X >= r - 1/2)
  // above. The hazard 1 - P(L >= r + 1) / P(L >= r) comes from the
  // normal's upper tail itself, which keeps its precision far out, where
  // 1 minus a sum of probabilities would be rounding noise.
  const auto at_least = [&](int r) {
    return r <= min_length ? 1.0 : NormalUpperTail(r - 0.5, mean, stddev);
  };
  SegmentPrior prior;
  prior.probability_.assign(static_cast<size_t>(longest), 0.0);
  prior.hazard_.assign(static_cast<size_t>(longest), 1.0);
  for (int r = 1; r < longest; ++r) {
    const double here = at_least(r), next = at_least(r + 1);
    prior.probability_[r - 1] = here - next;
    if (here > 0) prior.hazard_[r - 1] = 1.0 - next / here;
  }
  prior.probability_[longest - 1] = at_least(longest);  // the tail ends at `longest`
  prior.description_ = absl::StrFormat("truncated normal (mean %g, sd %g, at least %d)", mean,
                                       stddev, min_length);
  return prior;
}

absl::StatusOr<SegmentPrior> SegmentPrior::ConstantHazard(double hazard) {
  if (!(hazard > 0 && hazard <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("constant-hazard segment prior: hazard ", hazard, " is not in (0, 1]"));
  }
  SegmentPrior prior;
  prior.constant_hazard_ = hazard;
  prior.description_ = absl::StrFormat("constant hazard %g (mean length %g)", hazard, 1 / hazard);
  return prior;
}

absl::StatusOr<SegmentPrior> SegmentPrior::Empirical(const std::vector<int>& lengths) {
  if (lengths.empty()) {
    return absl::InvalidArgumentError("empirical segment prior: no segment lengths given");
  }
  int longest = 0;
  for (int length : lengths) {
    if (length < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("empirical segment prior: segment length ", length, " is not at least 1"));
    }
    longest = std::max(longest, length);
  }
  std::vector<double> probability(static_cast<size_t>(longest), 0.0);
  for (int length : lengths) probability[length - 1] += 1.0;
  return FromProbabilities(std::move(probability),
                           absl::StrCat("empirical (", lengths.size(), " segments)"));
}

double SegmentPrior::Hazard(int run_length) const {
  if (constant_hazard_ > 0) return constant_hazard_;
  if (run_length < 1) return 0.0;
  if (static_cast<size_t>(run_length) > hazard_.size()) return 1.0;
  return hazard_[run_length - 1];
}

double SegmentPrior::Probability(int length) const {
  if (length < 1) return 0.0;
  if (constant_hazard_ > 0) return constant_hazard_ * std::pow(1 - constant_hazard_, length - 1);
  if (static_cast<size_t>(length) > probability_.size()) return 0.0;
  return probability_[length - 1];
}

int SegmentPrior::Sample(Rng& rng) const {
  const double u = rng.Uniform();
  if (constant_hazard_ > 0) {
    // Geometric: the first r with 1 - (1 - h)^r > u.
    if (constant_hazard_ >= 1) return 1;
    return 1 + static_cast<int>(std::floor(std::log1p(-u) / std::log1p(-constant_hazard_)));
  }
  double cumulative = 0;
  for (size_t i = 0; i < probability_.size(); ++i) {
    cumulative += probability_[i];
    if (u < cumulative) return static_cast<int>(i) + 1;
  }
  return static_cast<int>(probability_.size());
}

double SegmentPrior::MeanLength() const {
  if (constant_hazard_ > 0) return 1.0 / constant_hazard_;
  double mean = 0;
  for (size_t i = 0; i < probability_.size(); ++i) mean += static_cast<double>(i + 1) * probability_[i];
  return mean;
}

}  // namespace strata::secbad
