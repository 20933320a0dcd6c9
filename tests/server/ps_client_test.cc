// PsClient against a real strata_server (plain key-value mode) on this
// host, where requests take the shared-memory lane: concurrent waiters on
// one lane with the socket taking what the lane cannot, CancelAll of
// pulls the server holds back, and a worker that leaves on an error.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <set>
#include <thread>

#include "core/net/message_channel.h"
#include "core/net/ps_client.h"
#include "core/net/ps_wire.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

using testing::kBin;
using testing::Process;

class PsClientTest : public testing::ClusterTest {
 protected:
  // Starts a server holding keys of `sizes` floats for `workers` workers.
  void StartServer(const std::string& sizes, int workers) {
    server_ = std::make_unique<Process>(
        std::vector<std::string>{kBin + "strata_server", "--rank", "0", "--coordinator",
                                 "tcp://127.0.0.1:0", "--kv-sizes", sizes, "--conv-workers",
                                 std::to_string(workers), "--ready-file", dir_ + "/server.ready"},
        dir_ + "/server.log");
    address_ = server_->WaitForReady(dir_ + "/server.ready");
    ASSERT_FALSE(address_.empty()) << server_->log();
  }

  // Workers 0 and 1 registered together (the map comes once all have);
  // either is null when its connection failed.
  std::pair<std::unique_ptr<PsClient>, std::unique_ptr<PsClient>> ConnectTwoWorkers() {
    std::unique_ptr<PsClient> second;
    std::thread connect_second([&] {
      auto c = PsClient::Connect(Options(1));
      if (c.ok()) second = *std::move(c);
    });
    auto first = PsClient::Connect(Options(0));
    connect_second.join();
    return {first.ok() ? *std::move(first) : nullptr, std::move(second)};
  }

  PsClientOptions Options(int rank) const {
    PsClientOptions o;
    o.coordinator = address_;
    o.rank = rank;
    o.timeout = absl::Seconds(20);
    return o;
  }

  std::unique_ptr<Process> server_;
  std::string address_;
};

TEST_F(PsClientTest, ConcurrentWaitersShareTheLaneAndTheSocketTakesTheRest) {
  StartServer("1024,1024,1024,1024", 1);
  PsClientOptions o = Options(0);
  o.shm_slots = 2;  // fewer slots than requests in flight: some go over the socket
  auto client = PsClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024, 1024, 1024, 1024}, 1)).ok());
  for (uint32_t key = 0; key < 4; ++key) {
    ASSERT_TRUE(c.kv().Wait(c.kv().Init(key, Tensor::Full({1024}, 10.0f + key))).ok());
  }
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> threads;
  for (uint32_t key = 0; key < 4; ++key) {
    threads.emplace_back([&, key] {
      Tensor value = Tensor::Zeros({1024});
      for (int i = 0; i < 300; ++i) {
        value.data()[7] = -1.0f;
        if (!c.kv().Wait(c.kv().Pull(-1, key, value)).ok()) {
          failed++;
          return;
        }
        if (value.data()[7] != 10.0f + key || value.data()[1023] != 10.0f + key) wrong++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  ASSERT_TRUE(c.Done().ok());
  ASSERT_EQ(server_->Wait(), 0) << server_->log();
  EXPECT_NE(server_->log().find("[server 0] shares memory with worker 0 (2 slots"),
            std::string::npos)
      << server_->log();
}

// Passes everything to the channel it wraps; tests override what they
// watch.
class ForwardingChannel : public MessageChannel {
 public:
  explicit ForwardingChannel(std::unique_ptr<MessageChannel> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& m) override { return inner_->Send(m); }
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override { return inner_->ReceiveNow(); }
  int wait_fd() const override { return inner_->wait_fd(); }
  void Shutdown() override { inner_->Shutdown(); }
  uint64_t bytes_sent() const override { return inner_->bytes_sent(); }
  uint64_t bytes_received() const override { return inner_->bytes_received(); }

 private:
  std::unique_ptr<MessageChannel> inner_;
};

// Every message of both paths to a server, the socket and the
// shared-memory lane, passes through the channel seam: a decorator given
// to the client sees them all (what the fault injection of the reliability
// work will wrap).
class CountingChannel final : public ForwardingChannel {
 public:
  CountingChannel(std::unique_ptr<MessageChannel> inner, std::atomic<int>* sent,
                  std::atomic<int>* received)
      : ForwardingChannel(std::move(inner)), sent_(sent), received_(received) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& m) override {
    absl::StatusOr<size_t> n = ForwardingChannel::Send(m);
    if (n.ok()) ++*sent_;
    return n;
  }
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override {
    absl::StatusOr<std::optional<RawMessage>> m = ForwardingChannel::ReceiveNow();
    if (m.ok() && m->has_value()) ++*received_;
    return m;
  }

 private:
  std::atomic<int>* sent_;
  std::atomic<int>* received_;
};

TEST_F(PsClientTest, EveryMessageOfTheSocketAndTheLanePassesTheChannelSeam) {
  StartServer("1024,200000", 1);  // the second key is larger than a lane slot
  std::atomic<int> socket_sent{0}, socket_received{0}, lane_sent{0}, lane_received{0};
  PsClientOptions o = Options(0);
  o.shm_slot_bytes = 1024 * sizeof(float);
  o.decorate_channel =
      [&](std::unique_ptr<MessageChannel> inner) -> std::unique_ptr<MessageChannel> {
    const bool lane = dynamic_cast<LaneChannel*>(inner.get()) != nullptr;
    return std::make_unique<CountingChannel>(std::move(inner), lane ? &lane_sent : &socket_sent,
                                             lane ? &lane_received : &socket_received);
  };
  auto client = PsClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024, 200000}, 1)).ok());
  Tensor small = Tensor::Full({1024}, 2.0f), large = Tensor::Full({200000}, 3.0f);
  ASSERT_TRUE(c.kv().WaitAll({c.kv().Init(0, small), c.kv().Init(1, large)}).ok());
  const int lane_before = lane_sent.load(), socket_before = socket_sent.load();
  for (int i = 0; i < 10; ++i) {
    Tensor a = Tensor::Zeros({1024}), b = Tensor::Zeros({200000});
    ASSERT_TRUE(c.kv().WaitAll({c.kv().Pull(-1, 0, a), c.kv().Pull(-1, 1, b)}).ok());
    ASSERT_EQ(a.data()[1023], 2.0f);
    ASSERT_EQ(b.data()[199999], 3.0f);
  }
  // The small key's pulls went on the lane, the large key's on the socket:
  // one request and one reply each, all counted.
  EXPECT_EQ(lane_sent.load() - lane_before, 10);
  EXPECT_EQ(socket_sent.load() - socket_before, 10);
  EXPECT_GE(lane_received.load(), 11);    // the attach answer and the pulls
  EXPECT_GE(socket_received.load(), 11);  // the init answers and the pulls
  ASSERT_TRUE(c.Done().ok());
}

// Records the kind of every PUSH and PULL request sent.
class KindRecordingChannel final : public ForwardingChannel {
 public:
  KindRecordingChannel(std::unique_ptr<MessageChannel> inner, std::vector<MessageType>* kinds)
      : ForwardingChannel(std::move(inner)), kinds_(kinds) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& m) override {
    const MessageType kind = TypeOf(m.header());
    absl::StatusOr<size_t> n = ForwardingChannel::Send(m);
    if (n.ok() && (kind == wire::ps::Kind::PUSH || kind == wire::ps::Kind::PULL))
      kinds_->push_back(kind);
    return n;
  }

 private:
  std::vector<MessageType>* kinds_;
};

// PushThenPull sends each chunk's pull request right behind that chunk's
// push (not the whole key's pushes first), and the pull brings back the
// value the push produced.
TEST_F(PsClientTest, PushThenPullInterleavesEachChunksPushAndPull) {
  const int64_t size = 3 * kDefaultChunkElements;  // three chunks
  StartServer(std::to_string(size), 1);
  std::vector<MessageType> kinds;
  PsClientOptions o = Options(0);
  o.shared_memory = false;
  o.decorate_channel =
      [&](std::unique_ptr<MessageChannel> inner) -> std::unique_ptr<MessageChannel> {
    return std::make_unique<KindRecordingChannel>(std::move(inner), &kinds);
  };
  auto client = PsClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({size}, 1)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, Tensor::Full({size}, 1.0f))).ok());
  Tensor gradient = Tensor::Full({size}, 2.0f), value = Tensor::Zeros({size});
  KvClient::Exchange e = c.kv().PushThenPull(0, 0, gradient, value);
  ASSERT_TRUE(c.kv().WaitAll({e.push, e.pull}).ok());
  using K = wire::ps::Kind;
  EXPECT_EQ(kinds,
            (std::vector<MessageType>{K::PUSH, K::PULL, K::PUSH, K::PULL, K::PUSH, K::PULL}));
  // Plain SGD at the key-value mode's default rate 0.01: 1 - 0.01 * 2.
  EXPECT_FLOAT_EQ(value.data()[0], 0.98f);
  EXPECT_FLOAT_EQ(value.data()[size - 1], 0.98f);
  EXPECT_EQ(e.pull->version(), 1);
  ASSERT_TRUE(c.Done().ok());
}

// Records the size of every push it sends.
class PushSizeChannel final : public ForwardingChannel {
 public:
  PushSizeChannel(std::unique_ptr<MessageChannel> inner, std::vector<size_t>* sizes)
      : ForwardingChannel(std::move(inner)), sizes_(sizes) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& m) override {
    const bool push = TypeOf(m.header()) == wire::ps::Kind::PUSH;
    absl::StatusOr<size_t> n = ForwardingChannel::Send(m);
    if (n.ok() && push) sizes_->push_back(*n);
    return n;
  }

 private:
  std::vector<size_t>* sizes_;
};

// The wire.format knob's bf16: pushes and pull replies carry half the
// bytes, rounded to bfloat16 on the way; the server keeps and updates
// fp32, and what a pull hands the caller is fp32 again.
TEST_F(PsClientTest, Bf16PushesAndPullsCarryHalfTheBytesAndTheServerComputesInFp32) {
  StartServer("1024", 1);
  PsClientOptions o = Options(0);
  o.shared_memory = false;         // lanes carry fp32 whatever the format
  std::vector<size_t> push_bytes;  // each push message as sent
  o.decorate_channel = [&](std::unique_ptr<MessageChannel> inner) {
    return std::unique_ptr<MessageChannel>(
        std::make_unique<PushSizeChannel>(std::move(inner), &push_bytes));
  };
  auto client = PsClient::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, Tensor::Full({1024}, 1.0f))).ok());
  Tensor value = Tensor::Zeros({1024});
  // fp32 first: 1 - 0.01 * pi.
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(0, 0, Tensor::Full({1024}, 3.14159265f))).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(1, 0, value)).ok());
  const float after_fp32 = 1.0f - 0.01f * 3.14159265f;
  EXPECT_FLOAT_EQ(value.data()[0], after_fp32);
  // bf16: the gradient arrives as 3.140625, the server steps in fp32, the
  // reply rounds the new value to bfloat16.
  c.kv().set_wire_format(wire::DataType::BF16);
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(1, 0, Tensor::Full({1024}, 3.14159265f))).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(2, 0, value)).ok());
  ASSERT_EQ(push_bytes.size(), 2u);
  EXPECT_EQ(push_bytes[0] - push_bytes[1], 1024u * 2);  // the same header, half the payload
  const float on_server = after_fp32 - 0.01f * 3.140625f;
  uint32_t bits;
  std::memcpy(&bits, &on_server, sizeof(bits));
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;  // round to nearest even
  float rounded;
  std::memcpy(&rounded, &bits, sizeof(rounded));
  EXPECT_EQ(value.data()[0], rounded);
  EXPECT_EQ(value.data()[1023], rounded);
  EXPECT_NE(rounded, on_server);  // the rounding is visible
  // Back to fp32: the server's own value, unrounded.
  c.kv().set_wire_format(wire::DataType::F32);
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(2, 0, value)).ok());
  EXPECT_FLOAT_EQ(value.data()[0], on_server);
  ASSERT_TRUE(c.Done().ok());
}

TEST_F(PsClientTest, CancelAllEndsPullsTheServerHoldsBack) {
  StartServer("1024", 2);
  // Only worker 0 works.
  auto [client, idle] = ConnectTwoWorkers();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(idle, nullptr);
  PsClient& c = *client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  Tensor value = Tensor::Full({1024}, 3.0f);
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, value)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(0, 0, Tensor::Full({1024}, 1.0f))).ok());
  // Under BSP the pull of iteration 1 waits for worker 1's push, which
  // never comes.
  Tensor pulled = Tensor::Full({1024}, -5.0f);
  Ticket waiting = c.kv().Pull(1, 0, pulled);
  std::thread waiter([&] {
    absl::Status s = c.kv().Wait(waiting);
    EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  });
  testing::SleepScaled(absl::Milliseconds(200));
  EXPECT_FALSE(waiting->done());
  c.kv().CancelAll();
  waiter.join();
  EXPECT_EQ(pulled.data()[0], -5.0f);  // nothing was written
  // The client keeps working: the current values come back.
  Tensor now = Tensor::Zeros({1024});
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(-1, 0, now)).ok());
  EXPECT_EQ(now.data()[0], 3.0f);  // no update: BSP still waits for worker 1
  server_->Kill9();
}

TEST_F(PsClientTest, AWorkerThatLeavesFailsThePullsWaitingForItNamingWhy) {
  StartServer("1024", 2);
  auto [client, leaver] = ConnectTwoWorkers();
  ASSERT_NE(client, nullptr);
  ASSERT_NE(leaver, nullptr);
  PsClient& c = *client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, Tensor::Full({1024}, 3.0f))).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(0, 0, Tensor::Full({1024}, 1.0f))).ok());
  // Under BSP the pull of iteration 1 waits for worker 1's push; worker 1
  // stops on an error instead, and says so.
  Tensor pulled = Tensor::Full({1024}, -5.0f);
  Ticket waiting = c.kv().Pull(1, 0, pulled);
  testing::SleepScaled(absl::Milliseconds(200));
  ASSERT_FALSE(waiting->done());
  leaver->kv().Leave(absl::DataLossError("iteration 0: the disk is full"));
  const absl::Status s = c.kv().Wait(waiting);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(std::string(s.message()),
            "server 0 (" + address_ +
                ") refused pull of key 0 for iteration 1: worker 1 stopped: iteration 0: the disk "
                "is full; pulls waiting "
                "for its iterations cannot complete");
  EXPECT_EQ(pulled.data()[0], -5.0f);  // nothing was written
  // Later pulls that need its iterations are refused at once; the current
  // values are still served.
  EXPECT_EQ(c.kv().Wait(c.kv().Pull(1, 0, pulled)).code(), absl::StatusCode::kUnavailable);
  Tensor now = Tensor::Zeros({1024});
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(-1, 0, now)).ok());
  EXPECT_EQ(now.data()[0], 3.0f);
  // Once worker 0 is done the job cannot complete, and the server says why.
  ASSERT_TRUE(c.Done().ok());
  EXPECT_EQ(server_->Wait(), 1);
  EXPECT_NE(server_->log().find("every worker that had not finished has stopped (worker 1 "
                                "stopped: iteration 0: the disk is full); the job cannot complete"),
            std::string::npos)
      << server_->log();
}

// The kind of a received message, read from a copy (the original goes on).
MessageType KindOf(const RawMessage& raw) {
  RawMessage copy;
  for (const zmq::message_t& f : raw.frames) copy.frames.emplace_back(f.data(), f.size());
  absl::StatusOr<IncomingMessage> m = Decode(std::move(copy), WireLimits{});
  return m.ok() ? TypeOf(m->header()) : wire::Kind::ERROR;
}

// Loses the first answer of each kind in `lose`, sends every request of
// kind `repeat` twice, and counts the answers of each kind that arrive.
class LossyChannel final : public ForwardingChannel {
 public:
  struct Counts {
    std::atomic<int> lost{0};
    std::atomic<int> pull_replies{0};
  };
  LossyChannel(std::unique_ptr<MessageChannel> inner, std::set<MessageType> lose,
               std::optional<MessageType> repeat, Counts* counts)
      : ForwardingChannel(std::move(inner)),
        lose_(std::move(lose)),
        repeat_(repeat),
        counts_(counts) {}
  absl::StatusOr<size_t> Send(OutgoingMessage& m) override {
    if (repeat_ && TypeOf(m.header()) == *repeat_) (void)ForwardingChannel::Send(m);
    return ForwardingChannel::Send(m);
  }
  absl::StatusOr<std::optional<RawMessage>> ReceiveNow() override {
    while (true) {
      absl::StatusOr<std::optional<RawMessage>> m = ForwardingChannel::ReceiveNow();
      if (!m.ok() || !m->has_value()) return m;
      const MessageType kind = KindOf(**m);
      if (kind == wire::ps::Kind::PULL_REPLY) ++counts_->pull_replies;
      if (lose_.erase(kind) > 0) {
        ++counts_->lost;
        continue;
      }
      return m;
    }
  }

 private:
  std::set<MessageType> lose_;
  std::optional<MessageType> repeat_;
  Counts* counts_;
};

// `o` over sockets only, through a LossyChannel that loses answers of the
// kinds in `lose` and sends requests of kind `repeat` twice.
PsClientOptions ThroughLossyChannel(PsClientOptions o, std::set<MessageType> lose,
                                    std::optional<MessageType> repeat,
                                    LossyChannel::Counts* counts) {
  o.shared_memory = false;
  o.decorate_channel = [lose, repeat, counts](std::unique_ptr<MessageChannel> inner) {
    return std::unique_ptr<MessageChannel>(
        std::make_unique<LossyChannel>(std::move(inner), lose, repeat, counts));
  };
  return o;
}

// One parameter of 1024 floats set to 1, a push of 2 at iteration 0, and
// the pull of iteration 1 into `value`.
void InitPushAndPull(PsClient& c, Tensor& value) {
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, Tensor::Full({1024}, 1.0f))).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(0, 0, Tensor::Full({1024}, 2.0f))).ok());
  value = Tensor::Zeros({1024});
  ASSERT_TRUE(c.kv().Wait(c.kv().Pull(1, 0, value)).ok());
}

// A request whose answer is lost while the connection stays up is sent
// again after the resend timeout, and a repeated push is not applied twice.
TEST_F(PsClientTest, ARequestWhoseAnswerIsLostIsSentAgainAndAppliedOnce) {
  StartServer("1024", 1);
  LossyChannel::Counts counts;
  auto client = PsClient::Connect(ThroughLossyChannel(
      Options(0), {wire::ps::Kind::INIT_ACK, wire::ps::Kind::PUSH_ACK, wire::ps::Kind::PULL_REPLY},
      std::nullopt, &counts));
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  Tensor value;
  ASSERT_NO_FATAL_FAILURE(InitPushAndPull(c, value));
  EXPECT_EQ(counts.lost.load(), 3);
  EXPECT_EQ(c.kv().requests_resent(), 3u);
  EXPECT_EQ(c.kv().pulls_resent(), 1u);
  EXPECT_EQ(c.kv().answers_repeated(), 0u);  // each lost answer came once, to the request sent again
  // Plain SGD at the key-value mode's rate 0.01, once: 1 - 0.01 * 2 (0.96
  // had the repeated push been applied again).
  EXPECT_FLOAT_EQ(value.data()[0], 0.98f);
  EXPECT_FLOAT_EQ(value.data()[1023], 0.98f);
  ASSERT_TRUE(c.Done().ok());
  ASSERT_EQ(server_->Wait(), 0) << server_->log();
}

// A pull the server holds (BSP waits for worker 1) is asked for again and
// again: by a network that repeats it, and by the client's resend timer
// while the server is silent. The server answers it once.
TEST_F(PsClientTest, APullTheServerHoldsIsAnsweredOnceHoweverOftenItIsAsked) {
  StartServer("1024", 2);
  LossyChannel::Counts counts;
  std::unique_ptr<PsClient> second;
  std::thread connect_second([&] {
    auto c = PsClient::Connect(Options(1));
    if (c.ok()) second = *std::move(c);
  });
  auto first =
      PsClient::Connect(ThroughLossyChannel(Options(0), {}, wire::ps::Kind::PULL, &counts));
  connect_second.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_NE(second, nullptr);
  PsClient& c = **first;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(second->kv().SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Init(0, Tensor::Full({1024}, 1.0f))).ok());
  ASSERT_TRUE(c.kv().Wait(c.kv().Push(0, 0, Tensor::Full({1024}, 2.0f))).ok());
  Tensor value = Tensor::Zeros({1024});
  Ticket pull = c.kv().Pull(1, 0, value);
  // Long enough for the resend timer to ask again (at least 1 s of silence).
  testing::SleepScaled(absl::Milliseconds(2500));
  EXPECT_FALSE(pull->done());
  EXPECT_GE(c.kv().requests_resent(), 1u);
  ASSERT_TRUE(second->kv().Wait(second->kv().Push(0, 0, Tensor::Full({1024}, 4.0f))).ok());
  ASSERT_TRUE(c.kv().Wait(pull).ok());
  // Any second answer would have arrived by now.
  testing::SleepScaled(absl::Milliseconds(300));
  EXPECT_EQ(counts.pull_replies.load(), 1);
  EXPECT_EQ(c.kv().pulls_resent(), c.kv().requests_resent());
  EXPECT_EQ(c.kv().answers_repeated(), 0u);
  EXPECT_EQ(c.kv().answer_bytes_repeated(), 0u);
  EXPECT_FLOAT_EQ(value.data()[0], 1.0f - 0.01f * 3.0f);  // the mean of 2 and 4
  ASSERT_TRUE(c.Done().ok());
  ASSERT_TRUE(second->Done().ok());
  ASSERT_EQ(server_->Wait(), 0) << server_->log();
}

// A push the network delivers twice is applied once and acknowledged twice:
// the second acknowledgement is counted as an answer that came again, with
// its bytes, and nothing was sent again by the client.
TEST_F(PsClientTest, AnAnswerThatComesTwiceIsCountedWithItsBytes) {
  StartServer("1024", 1);
  LossyChannel::Counts counts;
  auto client =
      PsClient::Connect(ThroughLossyChannel(Options(0), {}, wire::ps::Kind::PUSH, &counts));
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  Tensor value;
  ASSERT_NO_FATAL_FAILURE(InitPushAndPull(c, value));
  EXPECT_FLOAT_EQ(value.data()[0], 0.98f);  // applied once
  EXPECT_EQ(c.kv().requests_resent(), 0u);
  EXPECT_EQ(c.kv().answers_repeated(), 1u);
  EXPECT_GT(c.kv().answer_bytes_repeated(), 0u);
  EXPECT_LT(c.kv().answer_bytes_repeated(), 1024u);  // an acknowledgement: a header, no floats
  ASSERT_TRUE(c.Done().ok());
  ASSERT_EQ(server_->Wait(), 0) << server_->log();
}

}  // namespace
}  // namespace strata
