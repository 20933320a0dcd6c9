// The ZeroMQ expert exchange refuses bad blocks from a raw ZeroMQ client
// posing as a peer — blocks before a HELLO, HELLOs for another job or from
// a non-peer, garbage, wrong job or sender, frames that disagree with the
// header, slots of the wrong size or width — names the problem,
// and still returns the good block; blocks from the real peer that arrive
// early wait for their turn; a silent peer times out with
// an error naming it.
#include "moe/expert_wire.h"
#include "moe/zmq_expert_exchange.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "core/net/fault_injection.h"
#include "tests/support/counting_endpoint.h"

namespace strata {
namespace {

using moe::BlockExpectation;
using moe::ExchangeBlock;
using moe::ExchangePhase;
using moe::ExchangeTag;

constexpr uint64_t kJob = 7;
constexpr int64_t kWidth = 4;

ExchangeTag SlotsTag(int64_t call, int chunks = 1) {
  ExchangeTag t;
  t.call = call;
  t.phase = ExchangePhase::kSlots;
  t.chunks = chunks;
  return t;
}

ExchangeBlock Rows(std::vector<int64_t> counts, float value) {
  int64_t rows = 0;
  for (int64_t c : counts) rows += c;
  return {counts, Tensor::Full({rows, kWidth}, value)};
}

class ExpertExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string base = absl::StrCat("ipc://", ::testing::TempDir(), "/xchg_", ::getpid());
    ExpertExchangeOptions o;
    o.size = 2;
    o.credentials.job_id = kJob;
    o.timeout = absl::Seconds(5);
    o.rank = 0;
    auto a = ZmqExpertExchange::Bind(base + "_0", o);
    ASSERT_TRUE(a.ok()) << a.status();
    a_ = *std::move(a);
    o.rank = 1;
    auto b = ZmqExpertExchange::Bind(base + "_1", o);
    ASSERT_TRUE(b.ok()) << b.status();
    b_ = *std::move(b);
    ASSERT_TRUE(a_->Connect({a_->address(), b_->address()}).ok());
    ASSERT_TRUE(b_->Connect({a_->address(), b_->address()}).ok());
    auto intruder = Socket::Connect(context_, SocketKind::kDealer, a_->address());
    ASSERT_TRUE(intruder.ok());
    intruder_ = *std::move(intruder);
  }

  // A block message as the exchange would send it, for the caller to spoil.
  void SendRaw(uint64_t job, int sender, const ExchangeTag& tag, std::vector<int64_t> counts,
               int64_t shape_rows, int64_t width, size_t frame_bytes) {
    OutgoingMessage m(wire::moe::Kind::EXPERT_BLOCK);
    auto h = m.header();
    h.setJobId(job);
    h.setSenderRole(wire::Role::FC_WORKER);
    h.setSenderRank(sender);
    auto t = BodyOf<wire::moe::Body>(h).initTag();
    t.setCall(tag.call);
    t.setPhase(static_cast<uint8_t>(tag.phase));
    t.setChunk(tag.chunk);
    t.setChunks(tag.chunks);
    auto c = BodyOf<wire::moe::Body>(h).initCounts(static_cast<unsigned>(counts.size()));
    for (size_t i = 0; i < counts.size(); ++i) c.set(static_cast<unsigned>(i), counts[i]);
    auto shape = BodyOf<wire::moe::Body>(h).initShape(2);
    shape.set(0, shape_rows);
    shape.set(1, width);
    if (frame_bytes > 0) m.AddFrame(std::string(frame_bytes, '\0'));
    ASSERT_TRUE(intruder_->Send(m).ok());
  }

  void SendHello(uint64_t job, int sender) {
    OutgoingMessage m(wire::Kind::HELLO);
    FillHello(m.header(), JobCredentials{job, "", "", "", ""}, wire::Role::FC_WORKER, sender);
    ASSERT_TRUE(intruder_->Send(m).ok());
  }

  zmq::context_t context_{1};
  std::unique_ptr<ZmqExpertExchange> a_, b_;
  std::unique_ptr<Socket> intruder_;
};

TEST_F(ExpertExchangeTest, BadBlocksAreRefusedAndTheHonestBlockStillArrives) {
  const ExchangeTag tag = SlotsTag(0);
  const BlockExpectation expect{kWidth, {3, 3}, false};  // two experts, up to 3 rows each
  // Garbage, then well-formed messages that are wrong in one way each.
  zmq::message_t junk(std::string("not a header"));
  ASSERT_TRUE(intruder_->raw().send(junk, zmq::send_flags::none));
  SendRaw(kJob, 1, tag, {1, 1}, 2, kWidth, 2 * kWidth * 4);  // before any HELLO
  SendHello(99, 1);                                          // another job
  SendHello(kJob, 5);                                        // not a peer
  SendHello(kJob, 1);                                        // admitted (an open group)
  SendRaw(99, 1, tag, {1, 1}, 2, kWidth, 2 * kWidth * 4);    // unknown job
  SendRaw(kJob, 5, tag, {1, 1}, 2, kWidth, 2 * kWidth * 4);  // not a peer
  SendRaw(kJob, 1, tag, {1, 1}, 2, kWidth, 3 * kWidth * 4);  // frame too long
  SendRaw(kJob, 1, tag, {1, 1}, 3, kWidth, 3 * kWidth * 4);  // shape disagrees with counts
  SendRaw(kJob, 1, SlotsTag(0, 2), {1, 1}, 2, kWidth, 2 * kWidth * 4);  // another degree d
  SendRaw(kJob, 1, tag, {5, 1}, 6, kWidth, 6 * kWidth * 4);             // slots past capacity
  SendRaw(kJob, 1, tag, {1, 1, 1}, 3, kWidth, 3 * kWidth * 4);          // one expert too many
  SendRaw(kJob, 1, tag, {1, 1}, 2, kWidth + 1, 2 * (kWidth + 1) * 4);   // wrong token width
  // Then the good block, on the same connection so that it comes last.
  SendRaw(kJob, 1, tag, {2, 1}, 3, kWidth, 3 * kWidth * 4);
  absl::StatusOr<ExchangeBlock> got = a_->Receive(1, tag, expect);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->counts, (std::vector<int64_t>{2, 1}));
  ASSERT_EQ(got->rows.dim(0), 3);
  for (float v : got->rows.ToVector()) ASSERT_EQ(v, 0.0f);
  EXPECT_EQ(a_->refused(), 12u);  // every bad message, none waiting as "early"
}

TEST_F(ExpertExchangeTest, BlocksThatArriveEarlyWaitForTheirTurn) {
  ASSERT_TRUE(b_->Send(0, SlotsTag(1), Rows({1, 0}, 2.0f)).ok());
  ASSERT_TRUE(b_->Send(0, SlotsTag(0), Rows({0, 1}, 1.0f)).ok());
  const BlockExpectation expect{kWidth, {3, 3}, false};
  absl::StatusOr<ExchangeBlock> first = a_->Receive(1, SlotsTag(0), expect);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->rows.data()[0], 1.0f);
  absl::StatusOr<ExchangeBlock> second = a_->Receive(1, SlotsTag(1), expect);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->rows.data()[0], 2.0f);
  EXPECT_EQ(a_->refused(), 0u);
}

TEST_F(ExpertExchangeTest, ASilentPeerTimesOutWithAnErrorNamingIt) {
  ExpertExchangeOptions o;
  o.size = 2;
  o.credentials.job_id = kJob;
  o.timeout = absl::Milliseconds(200);
  auto lonely = ZmqExpertExchange::Bind(
      absl::StrCat("ipc://", ::testing::TempDir(), "/xchg_lonely_", ::getpid()), o);
  ASSERT_TRUE(lonely.ok());
  absl::StatusOr<ExchangeBlock> got =
      (*lonely)->Receive(1, SlotsTag(3), BlockExpectation{kWidth, {3}, false});
  EXPECT_EQ(got.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(got.status().message(),
            "no slots of layer 0, call 3, chunk 0/1 from FC worker 1 within 200ms (is it alive "
            "and in the same step?)");
}

TEST(ExpertExchangeSeamTest, EveryMessageToTheInboxPassesTheEndpointDecorator) {
  const std::string base = absl::StrCat("ipc://", ::testing::TempDir(), "/xchg_seam_", ::getpid());
  testing::Tally tally;
  ExpertExchangeOptions o;
  o.credentials.job_id = kJob;
  o.timeout = absl::Seconds(5);
  o.decorate_endpoint = [&](std::unique_ptr<MessageEndpoint> inner) {
    return std::make_unique<testing::CountingEndpoint>(std::move(inner), &tally);
  };
  auto a = ZmqExpertExchange::Bind(base + "_0", o);
  ASSERT_TRUE(a.ok()) << a.status();
  o.rank = 1;
  o.decorate_endpoint = nullptr;
  auto b = ZmqExpertExchange::Bind(base + "_1", o);
  ASSERT_TRUE(b.ok()) << b.status();
  const std::vector<std::string> addresses = {(*a)->address(), (*b)->address()};
  ASSERT_TRUE((*a)->Connect(addresses).ok());
  ASSERT_TRUE((*b)->Connect(addresses).ok());
  const BlockExpectation expect{kWidth, {3, 3}, false};
  for (int call = 0; call < 3; ++call) {
    ASSERT_TRUE((*b)->Send(0, SlotsTag(call), Rows({1, 1}, static_cast<float>(call))).ok());
  }
  for (int call = 0; call < 3; ++call) {
    absl::StatusOr<ExchangeBlock> got = (*a)->Receive(1, SlotsTag(call), expect);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->rows.data()[0], static_cast<float>(call));
  }
  EXPECT_EQ(tally.Received(wire::Kind::HELLO), 1);
  EXPECT_EQ(tally.Received(wire::moe::Kind::EXPERT_BLOCK), 3);
  EXPECT_EQ(tally.Sent(wire::Kind::HELLO_ACK), 0);  // the exchange answers nothing
}

// Both inboxes lose and repeat a third of what they receive, blocks and
// acks alike: every block still arrives once, in its turn, intact, because
// unacknowledged blocks are sent again and repeated ones dropped; the peer
// that is not waiting (here, busy elsewhere) still answers, from its
// courier.
TEST(ExpertExchangeReliabilityTest, LostAndRepeatedBlocksAndAcksArriveOnceEach) {
  const std::string base = absl::StrCat("ipc://", ::testing::TempDir(), "/xchg_lossy_", ::getpid());
  FaultRates rates;
  rates.drop = 0.3;
  rates.duplicate = 0.3;
  rates.seed = 11;
  FaultCounts counts;
  ExpertExchangeOptions o;
  o.credentials.job_id = kJob;
  o.timeout = absl::Seconds(20);
  o.resend = RoundTripLimits{absl::Milliseconds(50), absl::Milliseconds(20), absl::Seconds(1)};
  o.decorate_endpoint = FaultyEndpoints(rates, &counts);
  auto a = ZmqExpertExchange::Bind(base + "_0", o);
  ASSERT_TRUE(a.ok()) << a.status();
  o.rank = 1;
  auto b = ZmqExpertExchange::Bind(base + "_1", o);
  ASSERT_TRUE(b.ok()) << b.status();
  const std::vector<std::string> addresses = {(*a)->address(), (*b)->address()};
  ASSERT_TRUE((*a)->Connect(addresses).ok());
  ASSERT_TRUE((*b)->Connect(addresses).ok());
  const BlockExpectation expect{kWidth, {3, 3}, false};
  constexpr int kCalls = 24;
  // b sends everything at once and then only sleeps: what a lost block
  // needs from b is its courier's.
  for (int call = 0; call < kCalls; ++call) {
    ASSERT_TRUE((*b)->Send(0, SlotsTag(call), Rows({1, 2}, static_cast<float>(call))).ok());
  }
  for (int call = 0; call < kCalls; ++call) {
    absl::StatusOr<ExchangeBlock> got = (*a)->Receive(1, SlotsTag(call), expect);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->counts, (std::vector<int64_t>{1, 2}));
    for (float v : got->rows.ToVector()) ASSERT_EQ(v, static_cast<float>(call));
  }
  EXPECT_GT(counts.dropped.load(), 0u);
  EXPECT_GT(counts.duplicated.load(), 0u);
  EXPECT_GT((*b)->resent(), 0u);
  EXPECT_GT((*a)->duplicates(), 0u);
  EXPECT_EQ((*a)->refused(), 0u);
}

TEST(ExpertExchangeCheckTest, CheckBlockNamesWhatDiffers) {
  const BlockExpectation expect{kWidth, {3, 3}, false};
  EXPECT_EQ(moe::CheckBlock(Rows({4, 0}, 0), expect).message(), "count 0 is 4, expected 0..3");
  EXPECT_EQ(moe::CheckBlock(Rows({1}, 0), expect).message(), "1 counts, expected 2");
  EXPECT_EQ(moe::CheckBlock(Rows({1, 1}, 0), BlockExpectation{kWidth, {1, 2}, true}).message(),
            "count 1 is 1, expected 2");
  ExchangeBlock narrow{{1, 1}, Tensor::Zeros({2, kWidth - 1})};
  EXPECT_EQ(moe::CheckBlock(narrow, expect).message(), "rows of shape [2, 3], expected [2, 4]");
  EXPECT_TRUE(moe::CheckBlock(Rows({3, 0}, 0), expect).ok());
}

}  // namespace
}  // namespace strata
