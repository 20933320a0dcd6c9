// Partition plan and wire decoding (every malformed-message case).
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

#include "absl/strings/str_cat.h"

#include "core/net/message_channel.h"
#include "core/net/partition_plan.h"
#include "core/net/ps_wire.h"
#include "core/net/transport.h"
#include "tests/support/cluster_fixture.h"

namespace strata {
namespace {

TEST(PartitionPlanTest, ChunksLargeTensorsAndBalancesServers) {
  const std::vector<int64_t> sizes = {320, 32, 1605632, 512, 5120, 10};
  PartitionPlan plan = PartitionPlan::Build(sizes, 2, 1 << 20);
  ASSERT_EQ(plan.chunks_of_key(2).size(), 2u);
  EXPECT_EQ(plan.chunks_of_key(2)[0].length, 1u << 20);
  EXPECT_EQ(plan.chunks_of_key(2)[1].offset, 1u << 20);
  EXPECT_NE(plan.chunks_of_key(2)[0].server, plan.chunks_of_key(2)[1].server);
  int64_t total = 0;
  for (int s = 0; s < 2; ++s) total += plan.elements_of_server(s);
  EXPECT_EQ(total, 320 + 32 + 1605632 + 512 + 5120 + 10);
  // Greedy least-loaded: the two servers differ by less than one chunk.
  EXPECT_LT(std::abs(plan.elements_of_server(0) - plan.elements_of_server(1)), 1 << 20);
  // Deterministic: the same inputs give the same plan.
  PartitionPlan again = PartitionPlan::Build(sizes, 2, 1 << 20);
  for (size_t i = 0; i < plan.chunks().size(); ++i) {
    EXPECT_EQ(plan.chunks()[i].server, again.chunks()[i].server);
  }
  EXPECT_NE(plan.Find(2, 1 << 20, 1605632 - (1 << 20)), nullptr);
  EXPECT_EQ(plan.Find(2, 5, 10), nullptr);
  EXPECT_EQ(plan.Find(99, 0, 1), nullptr);
}

class WireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WireLimits limits;
    limits.max_message_bytes = 1 << 16;
    auto server = Socket::Bind(context_, SocketKind::kRouter, "tcp://127.0.0.1:0", limits);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    auto client = Socket::Connect(context_, SocketKind::kDealer, server_->address(), limits);
    ASSERT_TRUE(client.ok());
    client_ = *std::move(client);
  }
  // Sends raw frames from the client; returns the decode result on the server.
  absl::StatusOr<IncomingMessage> RoundTrip(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      client_->raw().send(zmq::buffer(frames[i]),
                          i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    auto raw = server_->Receive(absl::Seconds(5));
    if (!raw.ok()) return raw.status();
    return Decode(*std::move(raw), server_->limits());
  }
  zmq::context_t context_{1};
  std::unique_ptr<Socket> server_;
  std::unique_ptr<Socket> client_;
};

TEST_F(WireTest, WellFormedMessageWithZeroCopyFrames) {
  OutgoingMessage m(wire::ps::Kind::PUSH);
  m.header().setIteration(7);
  Tensor t = Tensor::FromVector({3}, {1, 2, 3});
  m.AddFrame(t);
  ASSERT_TRUE(client_->Send(m).ok());
  auto raw = server_->Receive(absl::Seconds(5));
  ASSERT_TRUE(raw.ok());
  auto msg = Decode(*std::move(raw), server_->limits());
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(TypeOf(msg->header()), wire::ps::Kind::PUSH);
  EXPECT_EQ(msg->header().getIteration(), 7);
  ASSERT_EQ(msg->num_frames(), 1u);
  float out[3];
  msg->CopyFrameTo(0, out);
  EXPECT_EQ(out[2], 3.0f);
}

TEST_F(WireTest, GarbageHeader) {
  auto r = RoundTrip({"this is not a capnp message"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("malformed header"), std::string::npos) << r.status();
}

TEST_F(WireTest, TruncatedHeader) {
  OutgoingMessage m(wire::ps::Kind::PULL);
  BodyOf<wire::ps::Body>(m.header()).initSlices(4);
  std::string bytes = m.SerializedHeaderForTest();
  auto r = RoundTrip({bytes.substr(0, bytes.size() / 2 / 8 * 8)});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("malformed header"), std::string::npos) << r.status();
}

TEST_F(WireTest, WrongProtocolVersion) {
  OutgoingMessage m(wire::ps::Kind::PULL);
  m.header().setMajor(9);
  m.header().setMinor(1);
  auto r = RoundTrip({m.SerializedHeaderForTest()});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "peer speaks protocol version 9.1, this node speaks 3." +
                                      std::to_string(wire::PROTOCOL_MINOR) +
                                      " (major versions must match)");
}

TEST_F(WireTest, FrameCountAndSizeMustMatchTheHeader) {
  OutgoingMessage m(wire::ps::Kind::PUSH);
  auto sizes = m.header().initFrameBytes(2);
  sizes.set(0, 8);
  sizes.set(1, 8);
  auto r = RoundTrip({m.SerializedHeaderForTest(), std::string(8, 'a')});
  EXPECT_EQ(r.status().message(), "push header declares 2 data frames, 1 arrived");
  auto r2 = RoundTrip({m.SerializedHeaderForTest(), std::string(8, 'a'), std::string(5, 'b')});
  EXPECT_EQ(r2.status().message(), "push data frame 1 has 5 bytes, the header declares 8");
}

TEST_F(WireTest, OverTheSizeLimit) {
  OutgoingMessage m(wire::ps::Kind::PUSH);
  m.header().initFrameBytes(1).set(0, 100000);
  auto r = RoundTrip({m.SerializedHeaderForTest(), std::string(100000, 'x')});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("exceeds the limit of 65536 bytes"), std::string::npos);
}

// A multi-frame message over the size limit whose frames are each small
// enough for ZeroMQ to deliver: the frames past the limit are released as
// they are read, and Decode refuses the message.
TEST_F(WireTest, AMultiFrameMessageOverTheLimitIsReleasedAsItIsRead) {
  OutgoingMessage m(wire::ps::Kind::PUSH);
  for (int i = 0; i < 4; ++i) m.AddFrame(std::string(30000, 'x'));
  ASSERT_TRUE(client_->Send(m).ok());
  auto raw = server_->Receive(absl::Seconds(5));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_EQ(raw->frames.size(), 3u);  // the header and the two frames within 65536 bytes
  EXPECT_EQ(raw->dropped_frames, 2u);
  EXPECT_EQ(raw->dropped_bytes, 60000u);
  auto r = Decode(*std::move(raw), server_->limits());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("bytes exceeds the limit of 65536 bytes"), std::string::npos)
      << r.status();
}

// Queues are bounded: a peer that stops reading makes Send fail at once,
// naming the peer, instead of blocking or buffering without end.
TEST(SocketQueueTest, ASendToAPeerThatDoesNotReadFailsOnceTheQueueIsFull) {
  zmq::context_t context(1);
  WireLimits limits;
  limits.queue_messages = 4;  // messages per direction
  const std::string address = absl::StrCat("ipc://", ::testing::TempDir(), "/queue_", ::getpid());
  auto server = Socket::Bind(context, SocketKind::kRouter, address, limits);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = Socket::Connect(context, SocketKind::kDealer, address, limits);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::Status failed;
  int sent = 0;
  const Tensor payload = Tensor::Zeros({1 << 18});  // 1 MiB
  while (sent < 1000) {
    OutgoingMessage m(wire::ps::Kind::PUSH);
    m.AddFrame(payload);
    failed = (*client)->Send(m);
    if (!failed.ok()) break;
    ++sent;
    testing::SleepScaled(absl::Milliseconds(2));  // let ZeroMQ move what it can
  }
  EXPECT_TRUE(IsQueueFull(failed)) << failed;
  EXPECT_EQ(failed.message(),
            "the send queue to " + address + " is full (4 messages): the peer is not reading");
  // Both queues and the kernel's socket buffers: a few dozen megabytes at most.
  EXPECT_LT(sent, 64);
  EXPECT_GE(sent, 4);
}

// A DEALER channel to a ROUTER that answers one message and then closes.
// Returns what the channel's ReceiveNow gave, in order, until it reported
// an error or `polls` waits found nothing.
std::vector<std::string> ReceiveAcrossAClose(bool watch, std::string* address) {
  zmq::context_t context(1);
  auto server = Socket::Bind(context, SocketKind::kRouter, "tcp://127.0.0.1:0");
  if (!server.ok()) return {"bind failed"};
  *address = (*server)->address();
  auto socket = Socket::Connect(context, SocketKind::kDealer, *address);
  if (!socket.ok()) return {"connect failed"};
  ZmqChannel channel(*std::move(socket));
  if (watch && !channel.WatchForClose(context).ok()) return {"watch failed"};
  OutgoingMessage hello(wire::Kind::HELLO);
  if (!channel.Send(hello).ok()) return {"send failed"};
  auto got = (*server)->Receive(absl::Seconds(5));
  if (!got.ok()) return {"nothing reached the server"};
  OutgoingMessage answer(wire::Kind::HELLO_ACK);
  if (!(*server)->Send(answer, got->identity).ok()) return {"answer failed"};
  testing::SleepScaled(absl::Milliseconds(50));  // the answer is on its way
  server->reset();                         // the peer closes
  std::vector<std::string> seen;
  for (int polls = 0; polls < 10;) {
    absl::StatusOr<std::optional<RawMessage>> r = channel.ReceiveNow();
    if (!r.ok()) {
      seen.push_back(std::string(r.status().message()));
      break;
    }
    if (!r->has_value()) {
      WaitReadable(channel, absl::Milliseconds(100));
      ++polls;
      continue;
    }
    auto decoded = Decode(**std::move(r), WireLimits());
    seen.push_back(decoded.ok() ? KindName(TypeOf(decoded->header())) : "undecodable");
  }
  return seen;
}

TEST(ZmqChannelTest, AWatchedChannelDeliversWhatCameThenReportsTheClose) {
  std::string address;
  const std::vector<std::string> seen = ReceiveAcrossAClose(/*watch=*/true, &address);
  EXPECT_EQ(seen, (std::vector<std::string>{"hello-ack", address + " closed the connection"}));
}

TEST(ZmqChannelTest, AnUnwatchedChannelWaitsForThePeerToComeBack) {
  std::string address;
  const std::vector<std::string> seen = ReceiveAcrossAClose(/*watch=*/false, &address);
  EXPECT_EQ(seen, std::vector<std::string>{"hello-ack"});
}

// ZeroMQ hands over a frame wherever it lies: inside its message (up to 33
// bytes) or at any offset of a shared receive buffer. A decoded frame's
// bytes are aligned whatever they came as, and are the bytes sent.
TEST(DecodeTest, AFrameAtAnOddAddressIsReadAligned) {
  OutgoingMessage push(wire::ps::Kind::PUSH);
  push.AddFrame(std::string(20, '\0'));  // the header declares 20 bytes
  const kj::Array<capnp::word> header = push.EncodeHeader();
  static unsigned char storage[64];
  unsigned char* odd = storage + 3;
  const float values[5] = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f};
  std::memcpy(odd, values, sizeof(values));
  RawMessage raw;
  raw.frames.emplace_back(header.begin(), header.size() * sizeof(capnp::word));
  raw.frames.emplace_back(odd, sizeof(values), [](void*, void*) {}, nullptr);  // zero-copy
  ASSERT_EQ(reinterpret_cast<uintptr_t>(raw.frames[1].data()) % 4, 3u);
  absl::StatusOr<IncomingMessage> decoded = Decode(std::move(raw), WireLimits());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(decoded->frame_data(0)) % alignof(uint64_t), 0u);
  const float* read = static_cast<const float*>(decoded->frame_data(0));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(read[i], values[i]);
  float copy[5];
  decoded->CopyFrameTo(0, copy);
  EXPECT_EQ(copy[2], 3.25f);
}

}  // namespace
}  // namespace strata
