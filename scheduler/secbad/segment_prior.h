// SegmentPrior: what is believed, before any observation, about how long a
// segment of stable context lasts. The run-length inference
// (scheduler/secbad/run_length_posterior.h) needs it as a hazard: the
// probability that a segment which has lasted r steps ends right after
// them,
//
//   H(r) = P(L = r) / P(L >= r),   r = 1, 2, ...
//
// for a segment length L drawn from the prior. Three priors:
//
//   SegmentPrior::TruncatedNormal(80, 20, 10)  // L = max(round(N(80, 20)), 10), as SeCBAD draws them
//   SegmentPrior::ConstantHazard(1.0 / 80)     // memoryless: geometric lengths
//   SegmentPrior::Empirical({95, 61, 120})     // the lengths seen in a recorded trace
//
// Contract: hazards lie in [0, 1]; past the longest length the prior gives
// any mass to, a segment ends with certainty (H = 1). Immutable once made,
// so one prior may serve any number of threads.
#ifndef STRATA_SCHEDULER_SECBAD_SEGMENT_PRIOR_H_
#define STRATA_SCHEDULER_SECBAD_SEGMENT_PRIOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/util/rng.h"

namespace strata::secbad {

class SegmentPrior {
 public:
  // The longest segment a truncated-normal prior may reach (its tables
  // hold a hazard per length).
  static constexpr int kLongestSegment = 1'000'000;

  // L = max(round(X), min_length) for X ~ N(mean, stddev), ending at
  // `longest` (the hazard is 1 there); 0 for mean + 10 stddev, past which
  // the normal leaves under 1e-23 of its mass. InvalidArgument for a
  // stddev <= 0, a min_length < 1, a mean the truncation makes
  // meaningless or segments past kLongestSegment.
  static absl::StatusOr<SegmentPrior> TruncatedNormal(double mean, double stddev, int min_length,
                                                      int longest = 0);
  // H(r) = hazard for every r: segment lengths are geometric with mean
  // 1 / hazard. InvalidArgument unless 0 < hazard <= 1.
  static absl::StatusOr<SegmentPrior> ConstantHazard(double hazard);
  // The empirical distribution of `lengths` (each >= 1): the histogram of
  // a recorded trace's segment lengths. InvalidArgument for none or a
  // length < 1.
  static absl::StatusOr<SegmentPrior> Empirical(const std::vector<int>& lengths);

  // H(r) for r >= 1.
  double Hazard(int run_length) const;
  // P(L = r) for r >= 1 (for a constant hazard, the geometric law).
  double Probability(int length) const;
  // The expected segment length.
  double MeanLength() const;
  // A segment length drawn from the prior.
  int Sample(Rng& rng) const;
  // "truncated normal (mean 80, sd 20, at least 10)", for reports.
  const std::string& description() const { return description_; }

 private:
  SegmentPrior() = default;
  // Hazards from probabilities P(L = r), r = 1..n (index r - 1).
  static SegmentPrior FromProbabilities(std::vector<double> probability, std::string description);

  std::vector<double> probability_;  // P(L = r) at r - 1; empty for a constant hazard
  std::vector<double> hazard_;       // H(r) at r - 1
  double constant_hazard_ = 0;       // > 0 for a constant hazard
  std::string description_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_SEGMENT_PRIOR_H_
