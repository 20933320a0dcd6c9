// Fault injection at the transport seam: decorators for a client's
// MessageChannel and a serving process's MessageEndpoint that drop,
// duplicate, delay, reorder and truncate the messages they deliver, at
// seeded rates, so that a bad network can be had on demand (these machines'
// kernel has no netem) and driven deterministically by tests.
//
// Faults act on what a decorated side receives, each message at most one
// fault, drawn in this order: dropped (never delivered), truncated (its last
// frame cut to half, or its header when it has no data frame: the decoder
// refuses it), duplicated (delivered twice), delayed (held for `delay_by`),
// reordered (held until the next message has been delivered, or `delay_by`
// has passed). Held
// messages are released by a later receive once due, so a decorated side
// must poll with a timeout (every Strata receiver does). What is sent is
// not touched: the peer's decorator, where it has one, does that side.
// Shared-memory lanes (same_host()) are left as they are: memory on one
// host loses, repeats and reorders nothing, so a test that wants every
// message exposed turns the lanes off (--shared-memory=false).
//
// Partitions (cuts) act before those rates: a message whose sender and
// receiver a cut names, arriving while the cut lasts, vanishes (counted as
// cut). Processes are named as on the command line ("server0", "conv1",
// "fc0"; core/util/process_name.h); the sender is read from the message's
// header, the receiver is this process (FaultRates::self). A cut is timed
// from FaultRates::origin: one moment for every process of a job when the
// launcher hands them its own (origin_ms), so that a cut is one window of
// real time, restarted processes included.
//
//   FaultRates rates;
//   STRATA_ASSIGN_OR_RETURN(rates, ParseFaultRates("drop=0.01,duplicate=0.01,seed=7"));
//   options.decorate_channel = FaultyChannels(rates);
//
// Losses (lose=) single out messages instead: the first few of one kind
// from one process to another for one iteration vanish (counted as lost),
// so that a test can take exactly the answers a rare run of bad luck
// would, every time.
//
// Thread safety: as the decorated object's (one driving thread); the
// losses' tallies are shared by every object one decorator wraps.
#ifndef STRATA_CORE_NET_FAULT_INJECTION_H_
#define STRATA_CORE_NET_FAULT_INJECTION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/net/message_channel.h"
#include "core/net/message_endpoint.h"
#include "core/net/protocol.capnp.h"

namespace strata {

// Every message from `from` to `to` vanishes from `start` after the
// origin for `length`. "*" stands for every process (a silent peer: every
// message to and from it vanishes while its sockets stay open).
struct MessageCut {
  std::string from;
  std::string to;
  absl::Duration start;
  absl::Duration length = absl::InfiniteDuration();  // infinite: lasting
  // Whether the cut takes a message from `sender` to `receiver` ("" where
  // a message's sender or this process has no name) at `since_origin`.
  bool Takes(const std::string& sender, const std::string& receiver,
             absl::Duration since_origin) const;
};

// The first `count` messages of `kind` from `from` to `to` whose header
// names `iteration` vanish.
struct MessageLoss {
  std::string from;
  std::string to;
  MessageType kind = wire::Kind::ERROR;
  int64_t iteration = 0;
  int count = 1;
};

struct FaultRates {
  double drop = 0;  // each a probability per received message
  double truncate = 0;
  double duplicate = 0;
  double delay = 0;
  double reorder = 0;
  absl::Duration delay_by = absl::Milliseconds(50);
  uint64_t seed = 1;
  std::vector<MessageCut> cuts;
  std::vector<MessageLoss> losses;
  // When cuts are timed from; InfinitePast: when the decorator is made.
  absl::Time origin = absl::InfinitePast();
  // This process's name ("server0"); "" where it has none (a cut naming a
  // receiver then never applies here).
  std::string self;
  bool any() const {
    return drop + truncate + duplicate + delay + reorder > 0 || !cuts.empty() || !losses.empty();
  }
};

// "drop=0.01,truncate=0.001,duplicate=0.01,delay=0.02,delay_ms=50,reorder=0.01,seed=7"
// and partitions, any number of each:
//   cut=A:B@START[+LENGTH]   messages between A and B vanish, both ways
//   cut=A>B@START[+LENGTH]   messages from A to B vanish (a one-way cut)
//   silence=A@START[+LENGTH] every message to and from A vanishes
//   origin_ms=MS             the origin, in milliseconds since the Unix epoch
//   lose=A>B:KIND@ITERATION[xCOUNT]
//                            the first COUNT (1) messages of KIND (as
//                            KindName spells it: activation-grads) from A to
//                            B for ITERATION vanish
// with process names A, B and durations START, LENGTH ("3s", "1500ms"); no
// LENGTH: lasting. Any subset; "" is no fault. InvalidArgument naming the
// entry that is not a known name, not a number, a probability outside
// [0, 1], not a process, not a duration or not a message kind, or when the
// probabilities sum past 1.
absl::StatusOr<FaultRates> ParseFaultRates(const std::string& spec);

// What the decorators of one process injected, counted as it happens.
struct FaultCounts {
  std::atomic<uint64_t> delivered{0};  // messages handed on (duplicates counted twice)
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> truncated{0};
  std::atomic<uint64_t> duplicated{0};
  std::atomic<uint64_t> delayed{0};
  std::atomic<uint64_t> reordered{0};
  std::atomic<uint64_t> cut{0};   // vanished in a partition
  std::atomic<uint64_t> lost{0};  // vanished as a loss singled them out
  std::string Summary() const;    // "dropped 3, truncated 0, ..."
};

// The time a decorator holds messages against; tests inject their own.
class FaultClock {
 public:
  virtual ~FaultClock() = default;
  virtual absl::Time Now() const = 0;
};
const FaultClock& RealFaultClock();

// Decorators that wrap every channel (endpoint) they are given with faults
// at `rates`; each wrapped object draws from its own stream, derived from
// the seed and the order in which it was wrapped. `counts` and `clock`, when
// given, must outlive the wrapped objects.
ChannelDecorator FaultyChannels(const FaultRates& rates, FaultCounts* counts = nullptr,
                                const FaultClock* clock = nullptr);
EndpointDecorator FaultyEndpoints(const FaultRates& rates, FaultCounts* counts = nullptr,
                                  const FaultClock* clock = nullptr);

}  // namespace strata

#endif  // STRATA_CORE_NET_FAULT_INJECTION_H_
