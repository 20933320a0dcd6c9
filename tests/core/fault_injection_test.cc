// Fault injection at the transport seam (core/net/fault_injection.h),
// driven deterministically: a channel and an endpoint that deliver queued
// messages, a clock the test moves, and seeded draws. Each fault does what
// it says to the message, the counts add up, and one seed gives one run.
#include "core/net/fault_injection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"

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
  EXPECT_EQ(ParseFaultRates("lose=0.1").status().message(),
            "fault \"lose=0.1\": unknown fault (drop, truncate, duplicate, delay, delay_ms, "
            "reorder, seed)");
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

}  // namespace
}  // namespace strata
