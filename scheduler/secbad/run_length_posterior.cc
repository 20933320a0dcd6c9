#include "scheduler/secbad/run_length_posterior.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace strata::secbad {

RunLengthPosterior::RunLengthPosterior(SegmentPrior prior, std::unique_ptr<ObservationModel> model,
                                       int window)
    : prior_(std::move(prior)), model_(std::move(model)), window_(std::max(1, window)) {
  hazard_.assign(static_cast<size_t>(window_) + 1, 0.0);
  for (int i = 1; i <= window_; ++i) hazard_[i] = prior_.Hazard(i);
  Reset();
}

void RunLengthPosterior::Reset() {
  model_->Reset(window_);
  posterior_.clear();
  next_.assign(static_cast<size_t>(window_), 0.0);
  log_predictive_.assign(static_cast<size_t>(window_) + 1, 0.0);
  map_ = 0;
  change_detected_ = false;
  steps_ = 0;
  last_step_work_ = 0;
}

void RunLengthPosterior::Observe(const double* x) {
  const int previous_map = map_;
  if (posterior_.empty()) {
    // The first observation opens the first segment.
    posterior_.assign(static_cast<size_t>(window_), 0.0);
    posterior_[0] = 1.0;
    last_step_work_ = 1;
  } else {
    model_->LogPredictive(x, log_predictive_.data());
    // Densities relative to the largest, so no term underflows as a whole.
    const double top = *std::max_element(log_predictive_.begin(), log_predictive_.end());
    auto likelihood = [&](int slot) { return std::exp(log_predictive_[slot] - top); };
    double reset = 0;
    for (int k = 1; k <= window_; ++k) reset += posterior_[k - 1] * hazard_[k];
    next_[0] = reset * likelihood(0);
    for (int i = 2; i <= window_; ++i) {
      next_[i - 1] = posterior_[i - 2] * (1 - hazard_[i - 1]) * likelihood(i - 1);
    }
    // Hypothesis W also keeps what stays at least W long.
    next_[window_ - 1] += window_ > 1 ? posterior_[window_ - 1] * (1 - hazard_[window_]) *
                                            likelihood(window_)
                                      : 0.0;
    double total = 0;
    for (double p : next_) total += p;
    if (!(total > 0) || !std::isfinite(total)) {
      // Every hypothesis explains x impossibly: start a segment at x.
      std::fill(next_.begin(), next_.end(), 0.0);
      next_[0] = 1.0;
      total = 1.0;
    }
    for (int i = 0; i < window_; ++i) posterior_[i] = next_[i] / total;
    last_step_work_ = 2 * static_cast<int64_t>(window_);
  }
  model_->Observe(x);
  last_step_work_ += model_->last_work();
  ++steps_;
  map_ = 1 + static_cast<int>(std::max_element(posterior_.begin(), posterior_.end()) -
                              posterior_.begin());
  change_detected_ = steps_ > 1 && map_ < previous_map;
}

double RunLengthPosterior::ProbabilityOfRunAtMost(int k) const {
  double p = 0;
  for (int i = 1; i <= std::min(k, static_cast<int>(posterior_.size())); ++i) p += posterior_[i - 1];
  return p;
}

ContextBelief RunLengthPosterior::MixtureBelief() const {
  const int dims = model_->dims();
  if (posterior_.empty()) return model_->BeliefOf(0);
  ContextBelief mixture = model_->BeliefOf(0);  // for the shape of its distribution
  mixture.mean.assign(dims, 0.0);
  mixture.variance.assign(dims, 0.0);
  for (std::vector<double>& d : mixture.distribution) std::fill(d.begin(), d.end(), 0.0);
  std::vector<double> second(dims, 0.0);
  for (int i = 1; i <= window_; ++i) {
    const double p = posterior_[i - 1];
    if (p < 1e-12) continue;
    const ContextBelief b = model_->BeliefOf(i);  // the segment's i observations
    for (int d = 0; d < dims; ++d) {
      mixture.mean[d] += p * b.mean[d];
      second[d] += p * (b.variance[d] + b.mean[d] * b.mean[d]);
    }
    for (size_t d = 0; d < mixture.distribution.size(); ++d) {
      for (size_t g = 0; g < mixture.distribution[d].size(); ++g) {
        mixture.distribution[d][g] += p * b.distribution[d][g];
      }
    }
  }
  for (int d = 0; d < dims; ++d) {
    mixture.variance[d] = std::max(0.0, second[d] - mixture.mean[d] * mixture.mean[d]);
  }
  return mixture;
}

ContextBelief RunLengthPosterior::MapBelief() const { return model_->BeliefOf(map_); }

}  // namespace strata::secbad
