#include "core/net/round_trip.h"

#include <algorithm>

namespace strata {

void RoundTrip::Sample(absl::Duration elapsed) {
  elapsed = std::max(elapsed, absl::ZeroDuration());
  backoff_ = 1;
  if (samples_++ == 0) {
    smoothed_ = elapsed;
    deviation_ = elapsed / 2;
    return;
  }
  // RFC 6298's gains: 1/4 for the deviation, 1/8 for the mean.
  deviation_ = deviation_ * 3 / 4 + absl::AbsDuration(smoothed_ - elapsed) / 4;
  smoothed_ = smoothed_ * 7 / 8 + elapsed / 8;
}

void RoundTrip::TimedOut() {
  if (TimeoutAfter(1) < limits_.max) backoff_ *= 2;
}

RoundTripLimits GivingUpAfter(absl::Duration give_up, RoundTripLimits limits) {
  limits.backoff_cap = std::max(limits.min, give_up / 4);
  limits.initial = std::min(limits.initial, limits.backoff_cap);
  return limits;
}

absl::Duration RoundTrip::TimeoutAfter(int sends) const {
  const absl::Duration estimate =
      samples_ == 0 ? limits_.initial
                    : std::clamp(smoothed_ + 4 * deviation_, limits_.min, limits_.max);
  absl::Duration timeout = estimate * backoff_;
  for (int i = 1; i < sends && timeout < limits_.max; ++i) timeout *= 2;
  return std::min({timeout, limits_.max, std::max(estimate, limits_.backoff_cap)});
}

}  // namespace strata
