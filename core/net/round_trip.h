// RoundTrip: when to give up waiting for an answer and ask again.
//
// An estimate of a peer's answer time from the answers seen so far, in the
// manner of TCP's retransmission timer (RFC 6298): a smoothed mean and a
// smoothed deviation, updated by every answer to a request that was sent
// once (an answer to a request sent twice cannot say which send it
// answers: Karn's rule, so the caller does not sample it). The resend
// timeout is mean + 4 deviations, within [min, max]; before any sample it
// is `initial`. A request that has been resent waits twice as long again
// for each time it was sent (exponential back-off), up to `max`. A timeout
// also doubles the estimate itself until the next sample (RFC 6298, 5.5):
// resent requests give no samples, so without it an estimate learnt from
// small answers would go on expiring, and resending, while large ones
// cross a slow link. The floor is Linux TCP's minimum resend timeout, not
// RFC 6298's one second: a lost message is recovered in a fraction of a
// second on a fast link.
//
// Answers include the time a request takes to cross the link and to be
// queued behind others, so on a slow link the timeout grows with the
// transfer times it sees.
//
//   RoundTrip rtt;
//   rtt.Sample(answered_at - sent_at);             // sent once
//   if (now - sent_at >= rtt.TimeoutAfter(sends)) { resend(); rtt.TimedOut(); }
//
// Not thread-safe: one owner (the thread that holds the connection).
#ifndef STRATA_CORE_NET_ROUND_TRIP_H_
#define STRATA_CORE_NET_ROUND_TRIP_H_

#include "absl/time/time.h"

namespace strata {

struct RoundTripLimits {
  absl::Duration initial = absl::Seconds(1);
  absl::Duration min = absl::Milliseconds(200);
  absl::Duration max = absl::Seconds(30);
  // Back-off never stretches a wait past this, or past the estimate itself
  // where that is longer. An owner that gives up after T sets about T/4, so
  // that a request is asked again several times before T, and a peer cut
  // off for a while (a partition that heals) is asked again soon after it
  // can hear, not after a wait that has doubled past T.
  absl::Duration backoff_cap = absl::InfiniteDuration();
};

// The limits for an owner that gives up on a silent peer after `give_up`:
// `limits` with backoff_cap a quarter of it (never below `limits.min`), and
// the first wait (before any answer is timed) no longer than that cap, so
// that even the first request is asked again before the owner gives up.
RoundTripLimits GivingUpAfter(absl::Duration give_up, RoundTripLimits limits = {});

class RoundTrip {
 public:
  explicit RoundTrip(RoundTripLimits limits = {}) : limits_(limits) {}

  // An answer that took `elapsed` to a request sent once.
  void Sample(absl::Duration elapsed);
  // A wait expired: every timeout doubles (up to `max`) until the next Sample.
  void TimedOut();
  // The wait before asking again a request sent `sends` times (>= 1).
  absl::Duration TimeoutAfter(int sends) const;

  bool has_samples() const { return samples_ > 0; }
  absl::Duration smoothed() const { return smoothed_; }
  absl::Duration deviation() const { return deviation_; }

 private:
  RoundTripLimits limits_;
  int64_t samples_ = 0;
  absl::Duration smoothed_;
  absl::Duration deviation_;
  int backoff_ = 1;  // 2^(timeouts since the last sample)
};

}  // namespace strata

#endif  // STRATA_CORE_NET_ROUND_TRIP_H_
