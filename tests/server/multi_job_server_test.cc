// One server process serving two jobs at once (server/server_node.h): each
// job has its own key space, optimizer and connections, chosen by the job
// id its messages carry; a request for a job the server does not serve is
// refused naming the jobs it does; one job ending leaves the other served.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "core/net/ps_client.h"
#include "server/server_node.h"

namespace strata {
namespace {

ServerOptions KeyValueJob(uint64_t id, std::vector<int64_t> sizes, float lr) {
  ServerOptions o;
  o.coordinator = "tcp://127.0.0.1:0";
  o.job_id = id;
  o.kv_sizes = std::move(sizes);
  o.config.optimizer.lr = lr;
  o.workers = 1;
  return o;
}

PsClientOptions ClientOf(const std::string& coordinator, uint64_t job) {
  PsClientOptions o;
  o.coordinator = coordinator;
  o.rank = 0;
  o.credentials.job_id = job;
  o.timeout = absl::Seconds(20);
  return o;
}

class MultiJobServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto node = ServerNode::Create({KeyValueJob(1, {1024}, 1.0f), KeyValueJob(2, {10, 20}, 0.5f)});
    ASSERT_TRUE(node.ok()) << node.status();
    node_ = *std::move(node);
    server_ = std::thread([this] { served_ = node_->Run(); });
  }
  void TearDown() override {
    if (server_.joinable()) server_.join();
  }

  std::unique_ptr<ServerNode> node_;
  std::thread server_;
  absl::Status served_;
};

TEST_F(MultiJobServerTest, EachJobHasItsOwnKeySpaceAndOptimizer) {
  auto a = PsClient::Connect(ClientOf(node_->address(), 1));
  auto b = PsClient::Connect(ClientOf(node_->address(), 2));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  KvClient& ka = (*a)->kv();
  KvClient& kb = (*b)->kv();
  ASSERT_TRUE(ka.SetPlan(PartitionPlan::Build({1024}, 1)).ok());
  ASSERT_TRUE(kb.SetPlan(PartitionPlan::Build({10, 20}, 1)).ok());
  ASSERT_TRUE(ka.Wait(ka.Init(0, Tensor::Full({1024}, 1.0f))).ok());
  ASSERT_TRUE(kb.WaitAll({kb.Init(0, Tensor::Full({10}, 5.0f)),
                             kb.Init(1, Tensor::Full({20}, 7.0f))})
                  .ok());
  // One push each, of gradient 1: job 1 steps by lr 1, job 2 by lr 0.5.
  ASSERT_TRUE(ka.Wait(ka.Push(0, 0, Tensor::Full({1024}, 1.0f))).ok());
  ASSERT_TRUE(kb.Wait(kb.Push(0, 0, Tensor::Full({10}, 1.0f))).ok());
  Tensor va = Tensor::Zeros({1024}), vb = Tensor::Zeros({10}), vb1 = Tensor::Zeros({20});
  ASSERT_TRUE(ka.Wait(ka.Pull(1, 0, va)).ok());
  ASSERT_TRUE(kb.WaitAll({kb.Pull(1, 0, vb), kb.Pull(-1, 1, vb1)}).ok());
  EXPECT_FLOAT_EQ(va.data()[0], 0.0f);
  EXPECT_FLOAT_EQ(va.data()[1023], 0.0f);
  EXPECT_FLOAT_EQ(vb.data()[0], 4.5f);
  EXPECT_FLOAT_EQ(vb.data()[9], 4.5f);
  EXPECT_FLOAT_EQ(vb1.data()[19], 7.0f);
  // Job 1 ends; job 2 is still served.
  ASSERT_TRUE((*a)->Done().ok());
  Tensor again = Tensor::Zeros({10});
  ASSERT_TRUE(kb.Wait(kb.Pull(-1, 0, again)).ok());
  EXPECT_FLOAT_EQ(again.data()[0], 4.5f);
  ASSERT_TRUE((*b)->Done().ok());
  server_.join();
  EXPECT_TRUE(served_.ok()) << served_;
}

TEST_F(MultiJobServerTest, AJobTheServerDoesNotServeIsRefusedByName) {
  PsClientOptions stranger = ClientOf(node_->address(), 3);
  stranger.timeout = absl::Seconds(5);
  auto c = PsClient::Connect(stranger);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find("unknown job id 3 (server 0 serves jobs 1, 2)"),
            std::string::npos)
      << c.status();
  // The server's own jobs are unaffected.
  for (uint64_t job : {1, 2}) {
    auto client = PsClient::Connect(ClientOf(node_->address(), job));
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_TRUE((*client)->Done().ok());
  }
  server_.join();
  EXPECT_TRUE(served_.ok()) << served_;
}

TEST(MultiJobServerCreateTest, TwoJobsWithOneIdAreRefused) {
  auto node = ServerNode::Create({KeyValueJob(4, {8}, 1.0f), KeyValueJob(4, {8}, 1.0f)});
  EXPECT_EQ(node.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(node.status().message(), "two jobs with id 4: every job needs an id of its own");
}

}  // namespace
}  // namespace strata
