// Fault injection at the transport seam (core/net/fault_injection.h),
// driven deterministically: a channel and an endpoint that deliver queued
// messages, a clock the test moves, and seeded draws. Each fault does what
// it says to the message, the counts add up, and one seed gives one run.
#include "core/net/fault_injection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "core/net/ps_wire.h"
#include "core/net/stanza_wire.h"

namespace strata {
namespace {

class ManualClock final : public FaultClock {
 public:
  absl::Time Now() const override { return now_; }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_ = absl::UnixEpoch();
};

RawMessage Message(const std::string& header, const std::string& data = "") {
  RawMessage m;
  m.identity = "peer";
  m.frames.emplace_back(header.data(), header.size());
  if (!data.empty()) m.frames.emplace_back(data.data(), data.size());
  return m;
}

std::string HeaderOf(const RawMessage& m) { return m.frames.front().to_string(); }

// A channel that delivers what the test queued.
class QueueChannel final : public MessageChannel {
 public:
  explicit QueueChannel(std::deque<RawMessage>* queue) : queue_(queue) {}
  absl::StatusOr<size_t> Send(OutgoingMessage&) override { return 0; }
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override {
    if (queue_->empty()) return std::optional<RawMessage>();
    RawMessage m = std::move(queue_->front());
    queue_->pop_front();
    return std::make_optional(std::move(m));
  }
  int wait_fd() const override { return -1; }
  uint64_t bytes_sent() const override { return 0; }
  uint64_t bytes_received() const override { return 0; }

 private:
  std::deque<RawMessage>* queue_;
};

class FaultInjectionTest : public ::testing::Test {
 protected:
  // A faulty channel over `queue_` with `spec`.
  std::unique_ptr<MessageChannel> Channel(const std::string& spec) {
    auto rates = ParseFaultRates(spec);
    EXPECT_TRUE(rates.ok()) << rates.status();
    return FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  }
  // Everything the channel delivers now, by header.
  static std::vector<std::string> Drain(MessageChannel& channel) {
    std::vector<std::string> out;
    while (true) {
      auto got = channel.ReceiveNow();
      if (!got.ok() || !got->has_value()) return out;
      out.push_back(HeaderOf(**got));
    }
  }
  // Queues `m`; whether `channel` delivers a message now.
  bool Delivers(MessageChannel& channel, RawMessage m) {
    queue_.push_back(std::move(m));
    auto got = channel.ReceiveNow();
    return got.ok() && got->has_value();
  }
  void Queue(int n) {
    for (int i = 0; i < n; ++i) queue_.push_back(Message("m" + std::to_string(i)));
  }

  std::deque<RawMessage> queue_;
  FaultCounts counts_;
  ManualClock clock_;
};

TEST_F(FaultInjectionTest, RatesParseAndBadOnesAreNamed) {
  auto rates = ParseFaultRates("drop=0.01, duplicate=0.02,delay=0.1,delay_ms=20,seed=9");
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_DOUBLE_EQ(rates->drop, 0.01);
  EXPECT_DOUBLE_EQ(rates->duplicate, 0.02);
  EXPECT_EQ(rates->delay_by, absl::Milliseconds(20));
  EXPECT_EQ(rates->seed, 9u);
  EXPECT_FALSE(ParseFaultRates("")->any());
  EXPECT_EQ(ParseFaultRates("mangle=0.1").status().message(),
            "fault \"mangle=0.1\": unknown fault (drop, truncate, duplicate, delay, delay_ms, "
            "reorder, seed, cut, silence, lose, origin_ms)");
  EXPECT_EQ(ParseFaultRates("drop=lots").status().message(),
            "fault \"drop=lots\": not NAME=NUMBER");
  EXPECT_EQ(ParseFaultRates("drop=1.5").status().message(),
            "fault \"drop=1.5\": a probability is in [0, 1]");
  EXPECT_EQ(ParseFaultRates("drop=0.6,duplicate=0.6").status().message(),
            "faults \"drop=0.6,duplicate=0.6\": the probabilities add up to more than 1");
}

TEST_F(FaultInjectionTest, DroppedMessagesNeverArriveAndDuplicatesArriveTwice) {
  auto drop = Channel("drop=1");
  Queue(5);
  EXPECT_TRUE(Drain(*drop).empty());
  EXPECT_EQ(counts_.dropped.load(), 5u);
  auto twice = Channel("duplicate=1");
  Queue(2);
  EXPECT_EQ(Drain(*twice), std::vector<std::string>({"m0", "m0", "m1", "m1"}));
  EXPECT_EQ(counts_.duplicated.load(), 2u);
  EXPECT_EQ(counts_.delivered.load(), 4u);
}

TEST_F(FaultInjectionTest, DelayedMessagesArriveOnceTheirTimeHasCome) {
  auto channel = Channel("delay=1,delay_ms=50");
  Queue(2);
  EXPECT_TRUE(Drain(*channel).empty());
  clock_.Advance(absl::Milliseconds(49));
  EXPECT_TRUE(Drain(*channel).empty());
  clock_.Advance(absl::Milliseconds(1));
  EXPECT_EQ(Drain(*channel), std::vector<std::string>({"m0", "m1"}));
  EXPECT_EQ(counts_.delayed.load(), 2u);
}

TEST_F(FaultInjectionTest, ReorderedMessagesFollowTheNextOneOrGoAfterTheDelay) {
  // Seeded: some messages are held back, each overtaken by the next one.
  auto channel = Channel("reorder=0.4,seed=3");
  Queue(40);
  std::vector<std::string> got = Drain(*channel);
  clock_.Advance(absl::Milliseconds(50));  // a last one held back goes anyway
  for (const std::string& m : Drain(*channel)) got.push_back(m);
  ASSERT_EQ(got.size(), 40u);
  int swapped = 0;
  for (size_t i = 1; i < got.size(); ++i) {
    swapped += std::stoi(got[i].substr(1)) < std::stoi(got[i - 1].substr(1));
  }
  EXPECT_GT(swapped, 0);
  EXPECT_LE(static_cast<uint64_t>(swapped), counts_.reordered.load());
  std::vector<std::string> sorted = got;
  std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(1)) < std::stoi(b.substr(1));
  });
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sorted[i], "m" + std::to_string(i));
}

TEST_F(FaultInjectionTest, TruncatedMessagesLoseHalfTheirLastFrameAndFailToDecode) {
  auto channel = Channel("truncate=1");
  queue_.push_back(Message("header", "12345678"));
  auto got = channel->ReceiveNow();
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((**got).frames.back().to_string(), "1234");
  // A header alone is cut instead: the decoder refuses what is left.
  queue_.push_back(Message(std::string(16, '\0')));
  got = channel->ReceiveNow();
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((**got).frames.front().size(), 8u);
  EXPECT_FALSE(Decode(std::move(**got), WireLimits()).ok());
}

TEST_F(FaultInjectionTest, OneSeedGivesOneRunAndTheCountsAddUp) {
  auto run = [this](uint64_t seed) {
    queue_.clear();
    Queue(200);
    auto channel =
        Channel(absl::StrCat("drop=0.1,duplicate=0.1,delay=0.1,reorder=0.1,seed=", seed));
    std::vector<std::string> got = Drain(*channel);
    clock_.Advance(absl::Seconds(1));
    for (const std::string& m : Drain(*channel)) got.push_back(m);
    return got;
  };
  const std::vector<std::string> a = run(5);
  EXPECT_EQ(run(5), a);
  EXPECT_NE(run(6), a);
  // Over the three runs: every message was dropped or delivered (a
  // duplicate delivered twice).
  EXPECT_EQ(counts_.delivered.load() + counts_.dropped.load(), 600u + counts_.duplicated.load());
  EXPECT_GT(counts_.dropped.load(), 30u);
  EXPECT_LT(counts_.dropped.load(), 90u);
}

// An endpoint that delivers what the test queued at each collect.
class QueueEndpoint final : public MessageEndpoint {
 public:
  explicit QueueEndpoint(std::deque<RawMessage>* queue) : queue_(queue) {}
  const std::string& address() const override { return address_; }
  bool Serves(const std::string&) const override { return true; }
  absl::StatusOr<size_t> Send(const std::string&, OutgoingMessage&) override { return 0; }
  void AddPollItems(std::vector<zmq::pollitem_t>&) override {}
  void Collect(const zmq::pollitem_t*, int, EndpointEvents& events) override {
    while (!queue_->empty()) {
      events.messages.push_back(std::move(queue_->front()));
      queue_->pop_front();
    }
    events.closed.push_back("gone");
  }
  uint64_t bytes_sent() const override { return 0; }
  uint64_t bytes_received() const override { return 0; }

 private:
  std::deque<RawMessage>* queue_;
  std::string address_ = "queue";
};

TEST_F(FaultInjectionTest, AnEndpointDropsAtItsRateAndPassesTheRestOn) {
  auto rates = ParseFaultRates("drop=0.5,seed=11");
  ASSERT_TRUE(rates.ok());
  auto endpoint =
      FaultyEndpoints(*rates, &counts_, &clock_)(std::make_unique<QueueEndpoint>(&queue_));
  Queue(1000);
  EndpointEvents events;
  endpoint->Collect(nullptr, 1000, events);
  EXPECT_EQ(events.messages.size() + counts_.dropped.load(), 1000u);
  EXPECT_NEAR(static_cast<double>(counts_.dropped.load()), 500.0, 60.0);
  EXPECT_EQ(events.closed, std::vector<std::string>({"gone"}));  // not a message: untouched
}

// A message of `kind` whose header says `role` `rank` sent it.
RawMessage MessageFrom(wire::Role role, int rank, MessageType kind = wire::ps::Kind::PUSH,
                       int64_t iteration = 0) {
  OutgoingMessage out(kind);
  out.header().setSenderRole(role);
  out.header().setSenderRank(rank);
  out.header().setIteration(iteration);
  return Message(out.SerializedHeaderForTest());
}

TEST_F(FaultInjectionTest, CutsParseAndBadOnesAreNamed) {
  auto rates = ParseFaultRates("cut=conv0:server1@3s+5s,cut=server0>fc0@1500ms,silence=fc1@2s+1s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_TRUE(rates->any());
  ASSERT_EQ(rates->cuts.size(), 5u);
  const auto is = [](const MessageCut& c, const char* from, const char* to, absl::Duration start,
                     absl::Duration length) {
    return c.from == from && c.to == to && c.start == start && c.length == length;
  };
  EXPECT_TRUE(is(rates->cuts[0], "conv0", "server1", absl::Seconds(3), absl::Seconds(5)));
  EXPECT_TRUE(is(rates->cuts[1], "server1", "conv0", absl::Seconds(3), absl::Seconds(5)));
  EXPECT_TRUE(
      is(rates->cuts[2], "server0", "fc0", absl::Milliseconds(1500), absl::InfiniteDuration()));
  EXPECT_TRUE(is(rates->cuts[3], "fc1", "*", absl::Seconds(2), absl::Seconds(1)));
  EXPECT_TRUE(is(rates->cuts[4], "*", "fc1", absl::Seconds(2), absl::Seconds(1)));
  EXPECT_EQ(ParseFaultRates("origin_ms=1700000000123")->origin,
            absl::FromUnixMillis(1700000000123));
  EXPECT_EQ(ParseFaultRates("cut=conv0-server1@3s").status().message(),
            "fault \"cut=conv0-server1@3s\": not cut=A:B@START[+LENGTH] or "
            "cut=A>B@START[+LENGTH]");
  EXPECT_EQ(ParseFaultRates("cut=conv0:printer@1s").status().message(),
            "fault \"cut=conv0:printer@1s\": \"printer\" is not a process (server<rank>, "
            "conv<rank> or fc<rank>)");
  EXPECT_EQ(ParseFaultRates("cut=conv0:server1@soon").status().message(),
            "fault \"cut=conv0:server1@soon\": \"soon\" is not a start time such as 3s or 1500ms");
  EXPECT_EQ(ParseFaultRates("silence=fc0@1s+0s").status().message(),
            "fault \"silence=fc0@1s+0s\": \"0s\" is not a length such as 5s or 800ms");
  EXPECT_EQ(ParseFaultRates("cut=conv0:conv0@1s").status().message(),
            "fault \"cut=conv0:conv0@1s\": a cut is between two different processes");
  EXPECT_EQ(ParseFaultRates("silence=fc0").status().message(),
            "fault \"silence=fc0\": not silence=PROCESS@START[+LENGTH]");
  EXPECT_EQ(ParseFaultRates("origin_ms=-3").status().message(),
            "fault \"origin_ms=-3\": the origin is milliseconds since the Unix epoch");
}

TEST_F(FaultInjectionTest, ACutTakesTheMessagesOfItsSenderWhileItLastsAndNoOthers) {
  auto rates = ParseFaultRates("cut=conv0>server1@2s+3s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "server1";
  auto channel = FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  // Before the window, and from other senders during it: delivered.
  EXPECT_TRUE(Delivers(*channel, MessageFrom(wire::Role::CONV_WORKER, 0)));
  clock_.Advance(absl::Seconds(2));
  EXPECT_FALSE(Delivers(*channel, MessageFrom(wire::Role::CONV_WORKER, 0)));
  EXPECT_TRUE(Delivers(*channel, MessageFrom(wire::Role::CONV_WORKER, 1)));
  EXPECT_TRUE(Delivers(*channel, MessageFrom(wire::Role::FC_WORKER, 0)));
  clock_.Advance(absl::Milliseconds(2999));
  EXPECT_FALSE(Delivers(*channel, MessageFrom(wire::Role::CONV_WORKER, 0)));
  clock_.Advance(absl::Milliseconds(1));  // the window is [2 s, 5 s)
  EXPECT_TRUE(Delivers(*channel, MessageFrom(wire::Role::CONV_WORKER, 0)));
  EXPECT_EQ(counts_.cut.load(), 2u);
  EXPECT_EQ(counts_.delivered.load(), 4u);
}

TEST_F(FaultInjectionTest, AOneWayCutLeavesTheOtherDirectionAlone) {
  auto rates = ParseFaultRates("cut=conv0>server1@0s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "conv0";  // receives from server1: the cut is the other way
  auto channel = FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  queue_.push_back(MessageFrom(wire::Role::SERVER, 1));
  EXPECT_EQ(Drain(*channel).size(), 1u);
  EXPECT_EQ(counts_.cut.load(), 0u);
}

TEST_F(FaultInjectionTest, ASilentProcessHearsNothingAndIsHeardByNobody) {
  auto rates = ParseFaultRates("silence=fc0@1s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  // In fc0 itself: nothing arrives, not even a message whose header cannot
  // be read or one from a tool.
  rates->self = "fc0";
  auto inside =
      FaultyEndpoints(*rates, &counts_, &clock_)(std::make_unique<QueueEndpoint>(&queue_));
  // In server0: fc0's messages vanish, the others' do not.
  rates->self = "server0";
  auto outside =
      FaultyEndpoints(*rates, &counts_, &clock_)(std::make_unique<QueueEndpoint>(&queue_));
  clock_.Advance(absl::Seconds(1));
  const auto collected = [&](MessageEndpoint& endpoint, std::vector<RawMessage> messages) {
    for (RawMessage& m : messages) queue_.push_back(std::move(m));
    EndpointEvents events;
    endpoint.Collect(nullptr, 100, events);
    return events.messages.size();
  };
  std::vector<RawMessage> to_fc0;
  to_fc0.push_back(MessageFrom(wire::Role::CONV_WORKER, 0, wire::stanza::Kind::ACTIVATIONS));
  to_fc0.push_back(MessageFrom(wire::Role::TOOL, -1));
  to_fc0.push_back(Message("not a header"));
  EXPECT_EQ(collected(*inside, std::move(to_fc0)), 0u);
  std::vector<RawMessage> to_server0;
  to_server0.push_back(MessageFrom(wire::Role::FC_WORKER, 0));
  to_server0.push_back(MessageFrom(wire::Role::FC_WORKER, 1));
  to_server0.push_back(MessageFrom(wire::Role::CONV_WORKER, 0));
  EXPECT_EQ(collected(*outside, std::move(to_server0)), 2u);
  EXPECT_EQ(counts_.cut.load(), 4u);
}

TEST_F(FaultInjectionTest, AClusterMapIsTheCoordinatorsWhateverRankItCarries) {
  // The coordinator puts the recipient's rank into a cluster map.
  auto rates = ParseFaultRates("cut=server0>conv1@0s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "conv1";
  auto channel = FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  queue_.push_back(MessageFrom(wire::Role::SERVER, 1, wire::Kind::CLUSTER_MAP));
  queue_.push_back(MessageFrom(wire::Role::SERVER, 1, wire::ps::Kind::PULL_REPLY));
  EXPECT_EQ(Drain(*channel).size(), 1u);
  EXPECT_EQ(counts_.cut.load(), 1u);
}

TEST_F(FaultInjectionTest, CutsAreTimedFromTheGivenOrigin) {
  // A process (re)started 3 s after the job's origin is inside a cut from
  // 2 s to 8 s at once; timed from its own start it would not be.
  auto rates = ParseFaultRates("cut=conv0:server0@2s+6s");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "server0";
  rates->origin = clock_.Now();
  clock_.Advance(absl::Seconds(3));
  auto channel = FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  queue_.push_back(MessageFrom(wire::Role::CONV_WORKER, 0));
  EXPECT_TRUE(Drain(*channel).empty());
  EXPECT_EQ(counts_.cut.load(), 1u);
}

TEST_F(FaultInjectionTest, LossesParseAndBadOnesAreNamed) {
  auto rates = ParseFaultRates("lose=fc0>conv1:activation-grads@90x4,lose=conv0>server1:push@7");
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_TRUE(rates->any());
  ASSERT_EQ(rates->losses.size(), 2u);
  EXPECT_EQ(rates->losses[0].from, "fc0");
  EXPECT_EQ(rates->losses[0].to, "conv1");
  EXPECT_EQ(rates->losses[0].kind, wire::stanza::Kind::ACTIVATION_GRADS);
  EXPECT_EQ(rates->losses[0].iteration, 90);
  EXPECT_EQ(rates->losses[0].count, 4);
  EXPECT_EQ(rates->losses[1].kind, wire::ps::Kind::PUSH);
  EXPECT_EQ(rates->losses[1].iteration, 7);
  EXPECT_EQ(rates->losses[1].count, 1);
  EXPECT_EQ(ParseFaultRates("lose=fc0:conv1@90").status().message(),
            "fault \"lose=fc0:conv1@90\": not lose=A>B:KIND@ITERATION[xCOUNT]");
  EXPECT_EQ(ParseFaultRates("lose=fc0>conv1:gradients@90").status().message(),
            "fault \"lose=fc0>conv1:gradients@90\": \"gradients\" is not a message kind "
            "(activations, activation-grads, push, pull-reply, ...)");
  EXPECT_EQ(ParseFaultRates("lose=fc0>conv1:activations@soon").status().message(),
            "fault \"lose=fc0>conv1:activations@soon\": \"soon\" is not an iteration");
  EXPECT_EQ(ParseFaultRates("lose=fc0>conv1:activations@3x0").status().message(),
            "fault \"lose=fc0>conv1:activations@3x0\": \"0\" is not a count of messages (1 or "
            "more)");
  EXPECT_EQ(ParseFaultRates("lose=fc0>fc0:expert-block@3").status().message(),
            "fault \"lose=fc0>fc0:expert-block@3\": a loss is between two different processes");
}

TEST_F(FaultInjectionTest, ALossTakesItsFirstMessagesOfOneKindAndIterationAndNoOthers) {
  auto rates = ParseFaultRates("lose=fc0>conv1:activation-grads@90x2");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "conv1";
  const ChannelDecorator decorate = FaultyChannels(*rates, &counts_, &clock_);
  auto channel = decorate(std::make_unique<QueueChannel>(&queue_));
  // Another iteration, another kind, another sender: delivered.
  EXPECT_TRUE(Delivers(
      *channel, MessageFrom(wire::Role::FC_WORKER, 0, wire::stanza::Kind::ACTIVATION_GRADS, 89)));
  EXPECT_TRUE(Delivers(*channel, MessageFrom(wire::Role::FC_WORKER, 0, wire::Kind::ERROR, 90)));
  EXPECT_TRUE(Delivers(
      *channel, MessageFrom(wire::Role::FC_WORKER, 1, wire::stanza::Kind::ACTIVATION_GRADS, 90)));
  EXPECT_FALSE(Delivers(
      *channel, MessageFrom(wire::Role::FC_WORKER, 0, wire::stanza::Kind::ACTIVATION_GRADS, 90)));
  // The tally is the decorator's: a channel it wraps later goes on from it.
  auto renewed = decorate(std::make_unique<QueueChannel>(&queue_));
  EXPECT_FALSE(Delivers(
      *renewed, MessageFrom(wire::Role::FC_WORKER, 0, wire::stanza::Kind::ACTIVATION_GRADS, 90)));
  EXPECT_TRUE(Delivers(
      *renewed, MessageFrom(wire::Role::FC_WORKER, 0, wire::stanza::Kind::ACTIVATION_GRADS, 90)));
  EXPECT_EQ(counts_.lost.load(), 2u);
  EXPECT_EQ(counts_.delivered.load(), 4u);
}

TEST_F(FaultInjectionTest, ALossLeavesOtherReceiversAlone) {
  auto rates = ParseFaultRates("lose=fc0>conv1:activation-grads@90");
  ASSERT_TRUE(rates.ok()) << rates.status();
  rates->self = "conv0";
  auto channel = FaultyChannels(*rates, &counts_, &clock_)(std::make_unique<QueueChannel>(&queue_));
  queue_.push_back(MessageFrom(wire::Role::FC_WORKER, 0, wire::stanza::Kind::ACTIVATION_GRADS, 90));
  EXPECT_EQ(Drain(*channel).size(), 1u);
  EXPECT_EQ(counts_.lost.load(), 0u);
}

}  // namespace
}  // namespace strata
