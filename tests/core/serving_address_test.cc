// Serving addresses (core/net/serving_address.h): --bind forms and their
// errors, a port range taken port by port, the address peers are told
// (advertised, interface, wildcard), IPv6 literals, and an FC worker's
// expert exchange beside its socket.
#include "core/net/serving_address.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zmq.hpp>

#include "core/net/transport.h"
#include "fc_workers/head_expert_group.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

TEST(ServingAddressTest, BindAddressesParse) {
  auto one = ParseBindAddress("tcp://0.0.0.0:7000");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->host, "0.0.0.0");
  EXPECT_EQ(one->first_port, 7000);
  EXPECT_EQ(one->last_port, 7000);
  EXPECT_TRUE(one->wildcard());

  auto range = ParseBindAddress("tcp://10.1.2.3:7000-7015");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->first_port, 7000);
  EXPECT_EQ(range->last_port, 7015);
  EXPECT_FALSE(range->wildcard());

  auto v6 = ParseBindAddress("tcp://[::1]:0");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_TRUE(v6->ipv6());

  auto ipc = ParseBindAddress("ipc:///tmp/strata.sock");
  ASSERT_TRUE(ipc.ok());
  EXPECT_EQ(ipc->scheme, "ipc");
  EXPECT_EQ(ipc->host, "/tmp/strata.sock");
}

TEST(ServingAddressTest, MalformedBindAddressesAreRefusedNamingTheProblem) {
  auto message = [](const std::string& address) {
    return std::string(ParseBindAddress(address).status().message());
  };
  EXPECT_EQ(message("udp://1.2.3.4:5"),
            "bind address \"udp://1.2.3.4:5\": use tcp://HOST:PORT, tcp://HOST:FIRST-LAST or "
            "ipc://PATH");
  EXPECT_EQ(message("tcp://1.2.3.4:http"),
            "bind address \"tcp://1.2.3.4:http\": port \"http\" is not a number in [0, 65535]");
  EXPECT_EQ(message("tcp://1.2.3.4:7010-7000"),
            "bind address \"tcp://1.2.3.4:7010-7000\": the port range 7010-7000 must run from a "
            "port >= 1 up to one >= it");
  EXPECT_EQ(message("tcp://::1:7000"),
            "bind address \"tcp://::1:7000\": an IPv6 address goes in brackets: "
            "tcp://[::1]:7000");
  EXPECT_EQ(message("tcp://7000"), "bind address \"tcp://7000\": no HOST:PORT after tcp://");
}

TEST(ServingAddressTest, ARangeIsTriedPortByPortOnTheInterfacesAddress) {
  ServingAddress a("tcp://0.0.0.0:7000-7002");
  auto candidates = BindCandidates(a);
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(*candidates, std::vector<std::string>({"tcp://0.0.0.0:7000", "tcp://0.0.0.0:7001",
                                                   "tcp://0.0.0.0:7002"}));
  a.interface = "lo";
  candidates = BindCandidates(a);
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  EXPECT_EQ(candidates->front(), "tcp://127.0.0.1:7000");
}

TEST(ServingAddressTest, PeersAreToldTheAdvertisedHostWithTheBoundPort) {
  ServingAddress a("tcp://0.0.0.0:7000-7009");
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  // A wildcard bind advertises this machine's name...
  EXPECT_EQ(*AdvertisedAddress(a, "tcp://0.0.0.0:7003"), std::string("tcp://") + host + ":7003");
  // ... unless told a host, or an interface.
  a.advertise = "node3.cluster";
  EXPECT_EQ(*AdvertisedAddress(a, "tcp://0.0.0.0:7003"), "tcp://node3.cluster:7003");
  a.advertise = "";
  a.interface = "lo";
  EXPECT_EQ(*AdvertisedAddress(a, "tcp://127.0.0.1:7003"), "tcp://127.0.0.1:7003");
  // A specific bind host is what peers dial; an IPv6 one stays bracketed.
  EXPECT_EQ(*AdvertisedAddress(ServingAddress(), "tcp://127.0.0.1:41234"),
            "tcp://127.0.0.1:41234");
  EXPECT_EQ(*AdvertisedAddress(ServingAddress(), "tcp://[::1]:41234"), "tcp://[::1]:41234");
  EXPECT_EQ(*AdvertisedAddress(ServingAddress(), "ipc:///tmp/x"), "ipc:///tmp/x");
}

TEST(ServingAddressTest, AnUnknownInterfaceIsNamedWithTheOnesThereAre) {
  auto address = InterfaceAddress("nosuch0");
  EXPECT_EQ(address.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(address.status().message().find("network interface \"nosuch0\" has no address"),
            std::string::npos)
      << address.status();
  EXPECT_NE(address.status().message().find("lo"), std::string::npos) << address.status();
  EXPECT_EQ(*InterfaceAddress("lo"), "127.0.0.1");
}

// Whether 127.0.0.1:`port` can be bound now (a plain socket, closed at
// once: ZeroMQ closes its listeners later, on its I/O thread).
bool PortIsFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return free;
}

// The first port of a run of `n` free ones on 127.0.0.1, from the kernel's
// choice of a free port; 0 when none was found.
int FreeRangeStart(int n) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = {};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    const int first = ntohs(address.sin_port);
    bool free = first > 0 && first + n < 65535;
    for (int p = first; free && p < first + n; ++p) free = PortIsFree(p);
    if (free) return first;
  }
  return 0;
}

TEST(ServingAddressTest, SocketsOfOneRangeTakeItsPortsInTurnUntilNoneIsLeft) {
  zmq::context_t context(1);
  // Another test may take a port between the probe and the binds: try a
  // few ranges.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int first = FreeRangeStart(2);
    ASSERT_GT(first, 0);
    const std::string range =
        "tcp://127.0.0.1:" + std::to_string(first) + "-" + std::to_string(first + 1);
    auto a = Socket::Bind(context, SocketKind::kRouter, range);
    auto b = Socket::Bind(context, SocketKind::kRouter, range);
    if (!a.ok() || !b.ok() || (*a)->address() != "tcp://127.0.0.1:" + std::to_string(first)) {
      continue;
    }
    EXPECT_EQ((*b)->address(), "tcp://127.0.0.1:" + std::to_string(first + 1));
    auto c = Socket::Bind(context, SocketKind::kRouter, range);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(c.status().message(),
              "cannot bind " + range + ": every port of the range is in use");
    return;
  }
  FAIL() << "no free pair of ports stayed free long enough";
}

TEST(ServingAddressTest, IPv6LoopbackServesWhereTheMachineHasIt) {
  zmq::context_t context(1);
  auto server = Socket::Bind(context, SocketKind::kRouter, "tcp://[::1]:0");
  if (!server.ok()) STRATA_SKIP_WITHOUT("ipv6") << "no IPv6 loopback here: " << server.status();
  ASSERT_EQ((*server)->address().rfind("tcp://[::1]:", 0), 0u) << (*server)->address();
  auto client = Socket::Connect(context, SocketKind::kDealer, (*server)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  OutgoingMessage hello(wire::Kind::HEARTBEAT);
  ASSERT_TRUE((*client)->Send(hello).ok());
  auto raw = (*server)->Receive(absl::Seconds(5));
  ASSERT_TRUE(raw.ok()) << raw.status();
  EXPECT_FALSE(raw->identity.empty());
}

TEST(ServingAddressTest, AnFcWorkersExpertExchangeBindsBesideIt) {
  ServingAddress fc("tcp://0.0.0.0:7000-7003");
  fc.advertise = "10.0.0.7";
  auto exchange = ExpertExchangeAddress(fc);
  ASSERT_TRUE(exchange.ok());
  EXPECT_EQ(exchange->bind, fc.bind);  // the range's next free port
  EXPECT_EQ(exchange->advertise, "10.0.0.7");
  EXPECT_EQ(ExpertExchangeAddress(ServingAddress("ipc:///tmp/fc0"))->bind,
            "ipc:///tmp/fc0.experts");
  EXPECT_EQ(ExpertExchangeAddress(ServingAddress("ipc://*"))->bind, "ipc://*");
  auto one_port = ExpertExchangeAddress(ServingAddress("tcp://0.0.0.0:7000"));
  EXPECT_EQ(one_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(one_port.status().message(),
            "the FC worker binds tcp://0.0.0.0:7000, a single port, and its MoE expert exchange "
            "needs a second: give a port range (tcp://HOST:7000-7001) or port 0");
}

}  // namespace
}  // namespace strata
