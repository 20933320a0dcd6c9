// Shared-memory lanes: the socket (one header per packet, limits, closes,
// addresses) and the server's hub (accepting only its own user's lanes,
// identities, replies, closed lanes reported once).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/net/lane_socket.h"
#include "core/net/ps_wire.h"
#include "core/net/shm_region.h"
#include "server/lane_hub.h"
#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

// A connected pair: a client socket and the listener's accepted end.
struct LanePair {
  std::unique_ptr<LaneListener> listener;
  std::unique_ptr<LaneSocket> client;
  std::unique_ptr<LaneSocket> server;
};

LanePair Connect() {
  LanePair pair;
  auto listener = LaneListener::Listen();
  EXPECT_TRUE(listener.ok()) << listener.status();
  pair.listener = *std::move(listener);
  auto client = LaneSocket::Connect(pair.listener->address());
  EXPECT_TRUE(client.ok()) << client.status();
  pair.client = *std::move(client);
  auto accepted = pair.listener->Accept();
  EXPECT_TRUE(accepted.ok()) << accepted.status();
  pair.server = *std::move(accepted);
  EXPECT_NE(pair.server, nullptr);
  return pair;
}

// Sends a pull header for `iteration`.
absl::Status SendPull(LaneSocket& socket, int64_t iteration) {
  OutgoingMessage m(wire::ps::Kind::PULL);
  m.header().setIteration(iteration);
  return socket.Send(m).status();
}

// The next packet on `socket`, decoded, waiting up to a second.
absl::StatusOr<IncomingMessage> Next(LaneSocket& socket) {
  socket.WaitReadable(absl::Seconds(1));
  absl::StatusOr<std::optional<RawMessage>> packet = socket.ReceiveNow();
  if (!packet.ok()) return packet.status();
  if (!packet->has_value()) return absl::DeadlineExceededError("no packet");
  return Decode(**std::move(packet), WireLimits());
}

TEST(LaneSocketTest, CarriesOneHeaderPerPacketInOrder) {
  LanePair lane = Connect();
  for (int64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendPull(*lane.client, i).ok());
  }
  for (int64_t i = 0; i < 3; ++i) {
    absl::StatusOr<IncomingMessage> m = Next(*lane.server);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(TypeOf(m->header()), wire::ps::Kind::PULL);
    EXPECT_EQ(m->header().getIteration(), i);
  }
  absl::StatusOr<std::optional<RawMessage>> none = lane.server->ReceiveNow();
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  // And the other way.
  OutgoingMessage reply(wire::ps::Kind::PULL_REPLY);
  ASSERT_TRUE(lane.server->Send(reply).ok());
  absl::StatusOr<IncomingMessage> back = Next(*lane.client);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(TypeOf(back->header()), wire::ps::Kind::PULL_REPLY);
}

TEST(LaneSocketTest, RefusesDataFramesAndOversizeHeaders) {
  LanePair lane = Connect();
  OutgoingMessage push(wire::ps::Kind::PUSH);
  push.AddFrame(std::string(16, 'x'));
  absl::StatusOr<size_t> framed = lane.client->Send(push);
  EXPECT_EQ(framed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(framed.status().message(),
            "push with 1 data frames cannot go over a lane (headers only)");
  OutgoingMessage error(wire::Kind::ERROR);
  error.header().setErrorMessage(std::string(70000, 'e'));
  absl::StatusOr<size_t> oversize = lane.client->Send(error);
  EXPECT_EQ(oversize.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(oversize.status().message().find("exceeds the lane's limit of 65536 bytes"),
            std::string::npos)
      << oversize.status();
}

TEST(LaneSocketTest, AnOversizePacketIsDiscardedAndTheLaneStaysUsable) {
  LanePair lane = Connect();
  const std::string big(70000, 'x');
  ASSERT_EQ(::send(lane.client->fd(), big.data(), big.size(), 0), 70000);
  ASSERT_TRUE(SendPull(*lane.client, 5).ok());
  absl::StatusOr<IncomingMessage> first = Next(*lane.server);
  EXPECT_EQ(first.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(first.status().message(),
            "a 70000-byte lane packet exceeds the limit of 65536 bytes (discarded)");
  absl::StatusOr<IncomingMessage> second = Next(*lane.server);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->header().getIteration(), 5);
}

TEST(LaneSocketTest, APeerThatClosesIsUnavailable) {
  LanePair lane = Connect();
  lane.client.reset();
  absl::StatusOr<std::optional<RawMessage>> packet = lane.server->ReceiveNow();
  EXPECT_EQ(packet.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(packet.status().message(), "the lane's peer closed it");
  EXPECT_EQ(SendPull(*lane.server, 1).code(), absl::StatusCode::kUnavailable);
}

TEST(LaneSocketTest, ConnectsOnlyToLanesOnThisHostAndNamespace) {
  EXPECT_FALSE(LaneIsLocal("elsewhere/net:[1]#00001"));
  absl::StatusOr<std::unique_ptr<LaneSocket>> elsewhere =
      LaneSocket::Connect("elsewhere/net:[1]#00001");
  EXPECT_EQ(elsewhere.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(elsewhere.status().message(),
            "the lane elsewhere/net:[1]#00001 is not on this host and network namespace (" +
                ColocationId() + ")");
  absl::StatusOr<std::unique_ptr<LaneSocket>> malformed = LaneSocket::Connect("tcp://x:1");
  EXPECT_EQ(malformed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(malformed.status().message(),
            "malformed lane address \"tcp://x:1\" (expected HOST/NETNS#NAME)");
  const std::string nobody = ColocationId() + "#strata-test-nobody-listens";
  EXPECT_TRUE(LaneIsLocal(nobody));
  absl::StatusOr<std::unique_ptr<LaneSocket>> refused = LaneSocket::Connect(nobody);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(),
            "cannot connect to the lane " + nobody + ": Connection refused");
}

// Polls the hub (as a server polls its endpoints) until `enough` holds for
// what arrived, or for a second.
EndpointEvents Serve(LaneHub& hub, const std::function<bool(const EndpointEvents&)>& enough) {
  EndpointEvents all;
  MessageEndpoint* endpoints[] = {&hub};
  for (int i = 0; i < 100 && !enough(all); ++i) {
    absl::StatusOr<EndpointEvents> events =
        PollEndpoints(endpoints, absl::Milliseconds(10), /*max_messages=*/256);
    EXPECT_TRUE(events.ok()) << events.status();
    if (!events.ok()) break;
    for (auto& r : events->messages) all.messages.push_back(std::move(r));
    for (auto& r : events->refused) all.refused.push_back(r);
    for (auto& c : events->closed) all.closed.push_back(c);
  }
  return all;
}

// The job token the hubs' lane names derive from.
constexpr char kToken[] = "lane-test-token";

// A server address of this test process alone (the lane name derives from it).
std::string TestServerAddress(const std::string& test) {
  return absl::StrCat("ipc:///tmp/lane-test-", ::getpid(), "-", test);
}

TEST(LaneHubTest, NamesEachLaneAndRoutesRepliesToIt) {
  auto hub = LaneHub::Listen("server 0", TestServerAddress("routes"), kToken);
  ASSERT_TRUE(hub.ok()) << hub.status();
  auto a = LaneSocket::Connect((*hub)->address());
  auto b = LaneSocket::Connect((*hub)->address());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(SendPull(**a, 1).ok());
  ASSERT_TRUE(SendPull(**b, 2).ok());
  EndpointEvents events = Serve(**hub, [](const auto& e) { return e.messages.size() == 2; });
  ASSERT_EQ(events.messages.size(), 2u);
  std::map<int64_t, std::string> identity_of;  // by iteration
  for (RawMessage& raw : events.messages) {
    EXPECT_TRUE(LaneHub::IsLane(raw.identity)) << raw.identity;
    const std::string identity = raw.identity;
    auto m = Decode(std::move(raw), WireLimits());
    ASSERT_TRUE(m.ok());
    identity_of[m->header().getIteration()] = identity;
  }
  ASSERT_EQ(identity_of.size(), 2u);
  EXPECT_NE(identity_of[1], identity_of[2]);
  // ZeroMQ identities are never lanes, whatever routing id a peer chose.
  EXPECT_FALSE(LaneHub::IsLane(
      EndpointIdentity(EndpointKind::kZeroMq, std::string("\0\x80\0\0\x29", 5))));
  EXPECT_FALSE(LaneHub::IsLane(EndpointIdentity(EndpointKind::kZeroMq, identity_of[1])));

  OutgoingMessage reply(wire::ps::Kind::PULL_REPLY);
  reply.header().setIteration(2);
  absl::StatusOr<size_t> sent = (*hub)->Send(identity_of[2], reply);
  ASSERT_TRUE(sent.ok()) << sent.status();
  EXPECT_GT(*sent, 0u);
  EXPECT_EQ((*hub)->bytes_sent(), *sent);
  absl::StatusOr<IncomingMessage> got = Next(**b);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->header().getIteration(), 2);
  EXPECT_EQ(Next(**a).status().code(), absl::StatusCode::kDeadlineExceeded);  // nothing for a

  // A closed lane is reported once; replies to it are dropped.
  a->reset();
  EndpointEvents after = Serve(**hub, [](const auto& e) { return !e.closed.empty(); });
  ASSERT_EQ(after.closed.size(), 1u);
  EXPECT_EQ(after.closed[0], identity_of[1]);
  absl::StatusOr<size_t> dropped = (*hub)->Send(identity_of[1], reply);
  EXPECT_EQ(dropped.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(dropped.status().message(), identity_of[1].substr(1) + " of server 0 is closed");
  // Reported once: a second look finds nothing more.
  EXPECT_TRUE(Serve(**hub, [](const auto& e) { return !e.closed.empty(); }).closed.empty());
}

// The region token proves possession of a region, not who the peer is: a
// lane from a process of another user is closed unread.
TEST(LaneHubTest, ALaneFromAnotherUserIsRefused) {
  if (::geteuid() != 0) STRATA_SKIP_WITHOUT("root") << "needs root to connect as another user";
  auto hub = LaneHub::Listen("server 0", TestServerAddress("uid"), kToken);
  ASSERT_TRUE(hub.ok()) << hub.status();
  const std::string address = (*hub)->address();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setuid(65534) != 0) ::_exit(2);  // nobody
    // LaneSocket::Connect would refuse a server of another user itself: a
    // hostile client connects by hand.
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un target{};
    target.sun_family = AF_UNIX;
    const std::string name = address.substr(address.rfind('#') + 1);
    std::memcpy(target.sun_path + 1, name.data(), name.size());
    const socklen_t length =
        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&target), length) != 0) ::_exit(1);
    OutgoingMessage pull(wire::ps::Kind::PULL);
    const std::string packet = pull.SerializedHeaderForTest();
    (void)!::send(fd, packet.data(), packet.size(), MSG_NOSIGNAL);  // the hub may have closed it
    testing::SleepScaled(absl::Milliseconds(500));
    ::_exit(0);
  }
  EndpointEvents events = Serve(**hub, [](const auto& e) { return !e.messages.empty(); });
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(events.messages.empty());
  // A lane of our own user is served.
  auto own = LaneSocket::Connect(address);
  ASSERT_TRUE(own.ok()) << own.status();
  ASSERT_TRUE(SendPull(**own, 8).ok());
  EndpointEvents served = Serve(**hub, [](const auto& e) { return !e.messages.empty(); });
  ASSERT_EQ(served.messages.size(), 1u);
}

TEST(LaneHubTest, TheLaneAddressFollowsTheServerAddress) {
  std::string first_address;
  {
    auto first = LaneHub::Listen("server 0", TestServerAddress("same"), kToken);
    ASSERT_TRUE(first.ok()) << first.status();
    first_address = (*first)->address();
    // Taken while the first listens.
    auto twin = LaneHub::Listen("server 0", TestServerAddress("same"), kToken);
    EXPECT_EQ(twin.status().code(), absl::StatusCode::kUnavailable);
    auto other = LaneHub::Listen("server 1", TestServerAddress("other"), kToken);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_NE((*other)->address(), first_address);
  }
  // A server restarted at the same address listens at the same lane address.
  auto again = LaneHub::Listen("server 0", TestServerAddress("same"), kToken);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->address(), first_address);
  EXPECT_TRUE(LaneSocket::Connect(first_address).ok());
  // The name needs the token: another user of the host knows the server's
  // address, but cannot tell its lane's name, nor take it first.
  const std::string address = TestServerAddress("same");
  EXPECT_NE(LaneHub::NameFor(address, kToken), LaneHub::NameFor(address, "another-token"));
  EXPECT_NE(LaneHub::NameFor(address, kToken), LaneHub::NameFor(address, ""));
  EXPECT_EQ(first_address.substr(first_address.rfind('#') + 1), LaneHub::NameFor(address, kToken));
  EXPECT_EQ(LaneHub::NameFor(address, kToken).find(std::to_string(::getpid())), std::string::npos);
}

// A ZeroMQ peer chooses its routing id: one that spells a lane's identity
// (ZeroMQ takes a leading zero byte from a peer) is delivered as a ZeroMQ
// identity all the same, which no lane hub serves, and answers reach it.
TEST(LaneHubTest, AZeroMqPeerCannotPassForALane) {
  auto hub = LaneHub::Listen("server 0", TestServerAddress("spoof"), kToken);
  ASSERT_TRUE(hub.ok()) << hub.status();
  auto lane = LaneSocket::Connect((*hub)->address());
  ASSERT_TRUE(lane.ok()) << lane.status();
  ASSERT_TRUE(SendPull(**lane, 1).ok());
  EndpointEvents from_lane = Serve(**hub, [](const auto& e) { return !e.messages.empty(); });
  ASSERT_EQ(from_lane.messages.size(), 1u);
  const std::string lane_identity = from_lane.messages[0].identity;

  zmq::context_t context(1);
  auto socket = ZmqEndpoint::Bind(context, ServingAddress(), WireLimits());
  ASSERT_TRUE(socket.ok()) << socket.status();
  for (const std::string& chosen : {std::string("\0lane:1", 7), lane_identity}) {
    zmq::socket_t spoofer(context, zmq::socket_type::dealer);
    spoofer.set(zmq::sockopt::linger, 0);
    spoofer.set(zmq::sockopt::routing_id, zmq::buffer(chosen));
    spoofer.connect((*socket)->address());
    OutgoingMessage pull(wire::ps::Kind::PULL);
    const std::string header = pull.SerializedHeaderForTest();
    ASSERT_TRUE(spoofer.send(zmq::buffer(header), zmq::send_flags::none));
    MessageEndpoint* endpoints[] = {hub->get(), socket->get()};
    std::vector<RawMessage> got;
    for (int i = 0; i < 100 && got.empty(); ++i) {
      absl::StatusOr<EndpointEvents> events = PollEndpoints(endpoints, absl::Milliseconds(20), 8);
      ASSERT_TRUE(events.ok()) << events.status();
      got = std::move(events->messages);
    }
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].identity, EndpointIdentity(EndpointKind::kZeroMq, chosen));
    EXPECT_FALSE(LaneHub::IsLane(got[0].identity));
    EXPECT_FALSE((*hub)->Serves(got[0].identity));
    EXPECT_TRUE((*socket)->Serves(got[0].identity));
    EXPECT_FALSE((*socket)->Serves(lane_identity));
    OutgoingMessage reply(wire::ps::Kind::PULL_REPLY);
    ASSERT_TRUE((*socket)->Send(got[0].identity, reply).ok());
    zmq::pollitem_t item{static_cast<void*>(spoofer), 0, ZMQ_POLLIN, 0};
    EXPECT_EQ(zmq::poll(&item, 1, std::chrono::seconds(5)), 1);
  }
}

TEST(LaneHubTest, AnOversizePacketIsRefusedForItsLane) {
  auto hub = LaneHub::Listen("server 0", TestServerAddress("oversize"), kToken);
  ASSERT_TRUE(hub.ok()) << hub.status();
  auto client = LaneSocket::Connect((*hub)->address());
  ASSERT_TRUE(client.ok());
  const std::string big(70000, 'x');
  ASSERT_EQ(::send((*client)->fd(), big.data(), big.size(), 0), 70000);
  EndpointEvents events = Serve(**hub, [](const auto& e) { return !e.refused.empty(); });
  ASSERT_EQ(events.refused.size(), 1u);
  EXPECT_TRUE(LaneHub::IsLane(events.refused[0].first));
  EXPECT_EQ(events.refused[0].second.message(),
            "a 70000-byte lane packet exceeds the limit of 65536 bytes (discarded)");
}

}  // namespace
}  // namespace strata
