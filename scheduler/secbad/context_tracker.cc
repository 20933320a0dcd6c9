#include "scheduler/secbad/context_tracker.h"

#include <algorithm>
#include <cmath>
#include <utility>


namespace strata::secbad {

namespace {

// How many features `features` makes of a belief shaped like `belief`.
int FeaturesOf(BeliefFeatures features, const ContextBelief& belief) {
  const int dims = static_cast<int>(belief.mean.size());
  switch (features) {
    case BeliefFeatures::kMean:
      return dims;
    case BeliefFeatures::kMeanAndSpread:
      return 2 * dims;
    case BeliefFeatures::kDistribution: {
      int total = 0;
      for (const std::vector<double>& d : belief.distribution) total += static_cast<int>(d.size());
      return total;
    }
  }
  return 0;
}

void WriteBelief(const ContextBelief& belief, BeliefFeatures features, float* out) {
  if (features == BeliefFeatures::kDistribution) {
    for (const std::vector<double>& d : belief.distribution) {
      for (double p : d) *out++ = static_cast<float>(p);
    }
    return;
  }
  const size_t dims = belief.mean.size();
  for (size_t d = 0; d < dims; ++d) {
    out[d] = static_cast<float>(belief.mean[d]);
    if (features == BeliefFeatures::kMeanAndSpread) {
      out[dims + d] = static_cast<float>(std::sqrt(belief.variance[d]));
    }
  }
}

class NoContextTracker final : public ContextTracker {
 public:
  int features() const override { return 0; }
  void Reset() override {}
  void Observe(const double*, const double*) override {}
  void Features(float*) const override {}
};

class OracleTracker final : public ContextTracker {
 public:
  explicit OracleTracker(int dims) : truth_(dims, 0.0) {}
  int features() const override { return static_cast<int>(truth_.size()); }
  void Reset() override { std::fill(truth_.begin(), truth_.end(), 0.0); }
  void Observe(const double*, const double* truth) override {
    if (truth != nullptr) std::copy(truth, truth + truth_.size(), truth_.begin());
  }
  void Features(float* out) const override {
    for (size_t d = 0; d < truth_.size(); ++d) out[d] = static_cast<float>(truth_[d]);
  }

 private:
  std::vector<double> truth_;
};

// Slot `window` of a model as wide as an episode holds everything seen.
class WholeHistoryTracker final : public ContextTracker {
 public:
  WholeHistoryTracker(std::unique_ptr<ObservationModel> model, int episode_steps,
                      BeliefFeatures features)
      : model_(std::move(model)), window_(episode_steps), features_(features) {
    Reset();
  }
  int features() const override { return FeaturesOf(features_, model_->BeliefOf(0)); }
  void Reset() override { model_->Reset(window_); }
  void Observe(const double* seen, const double*) override { model_->Observe(seen); }
  void Features(float* out) const override {
    WriteBelief(model_->BeliefOf(window_), features_, out);
  }

 private:
  std::unique_ptr<ObservationModel> model_;
  int window_;
  BeliefFeatures features_;
};

// With `reveal` >= 0: the truth once the segment has shown that many
// observations.
class KnownSegmentsTracker final : public ContextTracker {
 public:
  KnownSegmentsTracker(std::unique_ptr<ObservationModel> model, int window,
                       BeliefFeatures features, int reveal = -1)
      : model_(std::move(model)), window_(window), features_(features), reveal_(reveal) {
    Reset();
  }
  int features() const override { return FeaturesOf(features_, model_->BeliefOf(0)); }
  void Reset() override {
    model_->Reset(window_);
    seen_ = 0;
    observed_ = 0;
    truth_.clear();
  }
  void Observe(const double* seen, const double* truth) override {
    model_->Observe(seen);
    seen_ = std::min(seen_ + 1, window_);
    if (std::any_of(seen, seen + model_->dims(), [](double x) { return !std::isnan(x); })) {
      ++observed_;
    }
    if (truth == nullptr) return;
    const std::vector<double> next(truth, truth + model_->dims());
    if (!truth_.empty() && next != truth_) {  // a new segment from the next step
      model_->Reset(window_);
      seen_ = 0;
      observed_ = 0;
    }
    truth_ = next;
  }
  void Features(float* out) const override {
    if (reveal_ >= 0 && observed_ >= reveal_ && !truth_.empty()) {
      WriteBelief({truth_, std::vector<double>(truth_.size(), 0.0), {}}, features_, out);
      return;
    }
    WriteBelief(model_->BeliefOf(seen_), features_, out);
  }

 private:
  std::unique_ptr<ObservationModel> model_;
  int window_;
  BeliefFeatures features_;
  int reveal_;
  int seen_ = 0;
  int observed_ = 0;  // steps of this segment where any dimension was seen
  std::vector<double> truth_;
};

class SegmentTracker final : public ContextTracker {
 public:
  SegmentTracker(RunLengthPosterior inference, BeliefFeatures features)
      : inference_(std::move(inference)), features_(features) {}
  int features() const override {
    return FeaturesOf(features_, inference_.model().BeliefOf(0));
  }
  void Reset() override { inference_.Reset(); }
  void Observe(const double* seen, const double*) override { inference_.Observe(seen); }
  void Features(float* out) const override {
    WriteBelief(inference_.steps() == 0 ? inference_.model().BeliefOf(0) : inference_.MapBelief(),
                features_, out);
  }
  const RunLengthPosterior* posterior() const override { return &inference_; }

 private:
  RunLengthPosterior inference_;
  BeliefFeatures features_;
};

}  // namespace

std::unique_ptr<ContextTracker> NoContext() { return std::make_unique<NoContextTracker>(); }

std::unique_ptr<ContextTracker> OracleContext(int dims) {
  return std::make_unique<OracleTracker>(dims);
}

std::unique_ptr<ContextTracker> WholeHistoryContext(std::unique_ptr<ObservationModel> model,
                                                    int episode_steps, BeliefFeatures features) {
  return std::make_unique<WholeHistoryTracker>(std::move(model), episode_steps, features);
}

std::unique_ptr<ContextTracker> KnownSegmentsContext(std::unique_ptr<ObservationModel> model,
                                                     int window, BeliefFeatures features) {
  return std::make_unique<KnownSegmentsTracker>(std::move(model), window, features);
}

std::unique_ptr<ContextTracker> RevealedContext(std::unique_ptr<ObservationModel> model,
                                                int window, int observations,
                                                BeliefFeatures features) {
  return std::make_unique<KnownSegmentsTracker>(std::move(model), window, features,
                                                std::max(0, observations));
}

std::unique_ptr<ContextTracker> SegmentContext(SegmentPrior prior,
                                               std::unique_ptr<ObservationModel> model, int window,
                                               BeliefFeatures features) {
  return std::make_unique<SegmentTracker>(
      RunLengthPosterior(std::move(prior), std::move(model), window), features);
}

}  // namespace strata::secbad
