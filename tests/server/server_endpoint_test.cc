// The serving seam (core/net/message_endpoint.h): every message a server
// receives or sends, over its ROUTER socket and over its shared-memory
// lanes alike, passes the endpoint decorator of ServerOptions.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "core/net/message_endpoint.h"
#include "core/net/ps_client.h"
#include "core/net/ps_wire.h"
#include "server/lane_hub.h"
#include "server/server_node.h"
#include "tests/support/counting_endpoint.h"

namespace strata {
namespace {

using testing::CountingEndpoint;
using testing::Tally;

TEST(ServerEndpointTest, EveryMessageOfTheSocketAndTheLanesPassesTheEndpointSeam) {
  Tally socket, lane;
  std::atomic<int> wrapped{0};
  ServerOptions so;
  so.coordinator = "tcp://127.0.0.1:0";
  so.kv_sizes = {1024, 200000};  // the second key is larger than a lane slot
  so.workers = 1;
  so.decorate_endpoint =
      [&](std::unique_ptr<MessageEndpoint> inner) -> std::unique_ptr<MessageEndpoint> {
    ++wrapped;
    const bool is_lane = dynamic_cast<LaneHub*>(inner.get()) != nullptr;
    return std::make_unique<CountingEndpoint>(std::move(inner), is_lane ? &lane : &socket);
  };
  absl::StatusOr<std::unique_ptr<ServerNode>> node = ServerNode::Create(so);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(wrapped.load(), 2);  // the socket and the lane hub
  absl::Status served;
  std::thread server([&] { served = (*node)->Run(); });

  PsClientOptions co;
  co.coordinator = (*node)->address();
  co.rank = 0;
  co.timeout = absl::Seconds(20);
  co.shm_slot_bytes = 1024 * sizeof(float);
  auto client = PsClient::Connect(co);
  ASSERT_TRUE(client.ok()) << client.status();
  PsClient& c = **client;
  ASSERT_TRUE(c.kv().SetPlan(PartitionPlan::Build({1024, 200000}, 1)).ok());
  Tensor small = Tensor::Full({1024}, 2.0f), large = Tensor::Full({200000}, 3.0f);
  ASSERT_TRUE(c.kv().WaitAll({c.kv().Init(0, small), c.kv().Init(1, large)}).ok());
  const int lane_pulls = lane.Received(wire::ps::Kind::PULL);
  const int socket_pulls = socket.Received(wire::ps::Kind::PULL);
  for (int i = 0; i < 10; ++i) {
    Tensor a = Tensor::Zeros({1024}), b = Tensor::Zeros({200000});
    ASSERT_TRUE(c.kv().WaitAll({c.kv().Pull(-1, 0, a), c.kv().Pull(-1, 1, b)}).ok());
    ASSERT_EQ(a.data()[1023], 2.0f);
    ASSERT_EQ(b.data()[199999], 3.0f);
  }
  // The small key's pulls came on the lane, the large key's on the socket,
  // and each was answered on the path it came by.
  EXPECT_EQ(lane.Received(wire::ps::Kind::PULL) - lane_pulls, 10);
  EXPECT_EQ(socket.Received(wire::ps::Kind::PULL) - socket_pulls, 10);
  EXPECT_EQ(lane.Sent(wire::ps::Kind::PULL_REPLY), lane.Received(wire::ps::Kind::PULL));
  EXPECT_EQ(socket.Sent(wire::ps::Kind::PULL_REPLY), socket.Received(wire::ps::Kind::PULL));
  // Registration and the cluster map went through the socket's endpoint.
  EXPECT_EQ(socket.Received(wire::Kind::REGISTER), 1);
  EXPECT_GE(socket.Sent(wire::Kind::CLUSTER_MAP), 1);
  EXPECT_EQ(lane.Received(wire::Kind::REGISTER), 0);

  ASSERT_TRUE(c.Done().ok());
  server.join();
  EXPECT_TRUE(served.ok()) << served;
}

}  // namespace
}  // namespace strata
