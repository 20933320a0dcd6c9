// The analytic traffic plan against bytes measured in real clusters, and
// the plan's own arithmetic.
#include <gtest/gtest.h>

#include "core/model/job_config.h"
#include "core/status.h"
#include "tests/support/cluster_fixture.h"
#include "tools/bench/traffic_plan.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::RunCommand;

class TrafficPlanTest : public testing::ClusterTest {
 protected:
  // The default job's model.
  static absl::StatusOr<bench::ModelFacts> DefaultModelFacts() {
    STRATA_ASSIGN_OR_RETURN(JobConfig config, LoadJobConfig(kConfig));
    return bench::FactsOf(config);
  }
  // Per-sample costs of the trunk and the head (and of the head at the FC
  // worker's batch).
  static bench::ComputeCosts Costs(double trunk, double head, double fc_head = 0) {
    bench::ComputeCosts c;
    c.trunk_seconds = trunk;
    c.head_seconds = head;
    c.fc_head_seconds = fc_head;
    return c;
  }
};

TEST_F(TrafficPlanTest, PlanArithmeticForTheDefaultModel) {
  auto config = LoadJobConfig(kConfig);
  ASSERT_TRUE(config.ok());
  bench::ClusterShape shape{1, 2, 1, 64};
  auto facts = bench::FactsOf(*config);
  ASSERT_TRUE(facts.ok()) << facts.status();
  auto plan = bench::PlanTraffic(*facts, shape, 125e6, bench::ComputeCosts{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->facts.parameters, 1630090);
  EXPECT_EQ(plan->facts.trunk_parameters, 18816);
  EXPECT_EQ(plan->facts.boundary_elements, 3136);
  EXPECT_DOUBLE_EQ(plan->ps.bytes_per_iteration, 2.0 * 2 * 1630090 * 4);
  // trunk push+pull, activations + labels, activation gradients
  EXPECT_DOUBLE_EQ(plan->stanza.bytes_per_iteration,
                   2.0 * 2 * 18816 * 4 + 2 * 32 * (3136 + 1) * 4.0 + 2 * 32 * 3136 * 4.0);
  EXPECT_EQ(plan->ps.busiest_link, "server");
  // Ring all-reduce: each of the 2 workers sends 2·(2−1)/2·P each way.
  EXPECT_DOUBLE_EQ(plan->ddp.busiest_link_bytes, 1630090 * 4.0);
  EXPECT_DOUBLE_EQ(plan->ddp.bytes_per_iteration, 2 * 1630090 * 4.0);
}

// Compute enters as per-image costs times the images each process handles:
// a conv worker its share of the batch, a stanza FC worker the heads of
// its conv workers' shares.
TEST_F(TrafficPlanTest, ComputeIsThePerImageCostTimesEachProcesssImages) {
  auto facts = DefaultModelFacts();
  ASSERT_TRUE(facts.ok()) << facts.status();
  const bench::ComputeCosts costs = Costs(0.002, 0.001);
  auto plan = bench::PlanTraffic(*facts, bench::ClusterShape{1, 4, 2, 64}, 0, costs);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan->ps.compute_seconds, 16 * 0.003);
  EXPECT_DOUBLE_EQ(plan->ddp.compute_seconds, 16 * 0.003);
  EXPECT_DOUBLE_EQ(plan->stanza.compute_seconds, 16 * 0.002 + 2 * 16 * 0.001);
  EXPECT_DOUBLE_EQ(plan->stanza.seconds_per_iteration, plan->stanza.compute_seconds);
  // FLOPs at a rate: the model's training FLOPs per image over the rate.
  const bench::ComputeCosts at = bench::CostsFromFlops(*facts, 10);
  EXPECT_DOUBLE_EQ(at.trunk_seconds + at.head_seconds,
                   (facts->trunk_flops + facts->head_flops) / 10e9);
}

// Where the processes share cores, k of them computing at once take
// max(1, k·threads/cores) as long; the FC worker's head is costed at its
// own batch.
TEST_F(TrafficPlanTest, SharedCoresSlowWhatComputesAtOnce) {
  auto facts = DefaultModelFacts();
  ASSERT_TRUE(facts.ok()) << facts.status();
  const bench::ComputeCosts costs = Costs(0.002, 0.001, 0.0005);
  bench::ClusterShape shape{1, 4, 2, 64};
  shape.shared_cores = 2;
  auto plan = bench::PlanTraffic(*facts, shape, 0, costs);
  ASSERT_TRUE(plan.ok());
  // Four workers on two cores: twice as long.
  EXPECT_DOUBLE_EQ(plan->ps.compute_seconds, 2 * 16 * 0.003);
  // Four conv workers' trunks on two cores, then two FC workers' heads.
  EXPECT_DOUBLE_EQ(plan->stanza.compute_seconds, 2 * 16 * 0.002 + 2 * 16 * 0.0005);
  shape.threads = 2;  // two FC workers of 2 threads each fill the 2 cores twice
  plan = bench::PlanTraffic(*facts, shape, 0, costs);
  ASSERT_TRUE(plan.ok());
  EXPECT_DOUBLE_EQ(plan->stanza.compute_seconds, 4 * 16 * 0.002 + 2 * 2 * 16 * 0.0005);
  shape.shared_cores = -1;
  EXPECT_FALSE(bench::PlanTraffic(*facts, shape, 0, costs).ok());
}

// Stanza's network phases come one after the other: the activations in to
// the FC worker, their gradients back, then the trunk's exchange through
// the server; a link carries kTcpPayloadShare of its rate.
TEST_F(TrafficPlanTest, StanzaNetworkPhasesAddUp) {
  auto facts = DefaultModelFacts();
  ASSERT_TRUE(facts.ok()) << facts.status();
  const double rate = 125e6 * bench::kTcpPayloadShare;
  auto plan = bench::PlanTraffic(*facts, bench::ClusterShape{1, 4, 1, 64}, 125e6, {});
  ASSERT_TRUE(plan.ok());
  const double t = 18816 * 4.0, a = 3136 * 4.0;
  const double in = 64 * (a + 4), back = 64 * a, exchange = 4 * t;  // at the server
  EXPECT_DOUBLE_EQ(plan->stanza.communication_seconds, (in + back + exchange) / rate);
  EXPECT_DOUBLE_EQ(plan->ps.communication_seconds, 4 * 1630090 * 4.0 / rate);
  EXPECT_DOUBLE_EQ(plan->ddp.communication_seconds, 2 * 3.0 / 4 * 1630090 * 4.0 / rate);
}

// A layer's parameters go out once backward has passed it, the last
// layer's first; the iteration ends when the link and backward both have.
TEST_F(TrafficPlanTest, TheExchangeOverlapsBackwardLayerByLayer) {
  bench::ModelFacts facts;
  facts.parameters = facts.trunk_parameters = 2000000;
  facts.layer_parameters = {1000000, 1000000};
  facts.split = 2;  // all trunk
  bench::ComputeCosts costs;
  costs.layer_forward_seconds = {0.005, 0.005};
  costs.layer_backward_seconds = {0.01, 0.01};
  costs.trunk_seconds = 0.03;
  // One worker, one server: the link carries 8 MB each way, in 1 s.
  const double bandwidth = 8e6 / bench::kTcpPayloadShare;
  auto plan = bench::PlanTraffic(facts, bench::ClusterShape{1, 1, 1, 1}, bandwidth, costs);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Forward 0.01; layer 1 passed at 0.01, sent by 0.51; layer 0 passed at
  // 0.02, sent by 1.01.
  EXPECT_NEAR(plan->ps.seconds_per_iteration, 0.01 + 1.01, 1e-12);
  EXPECT_NEAR(plan->ps.communication_seconds, 1.02 - 0.03, 1e-12);
  // Backward slower than the link: layer 1 passed at 1, sent by 1.5; layer
  // 0 passed at 2, sent by 2.5.
  costs.layer_backward_seconds = {1.0, 1.0};
  costs.trunk_seconds = 2.01;
  plan = bench::PlanTraffic(facts, bench::ClusterShape{1, 1, 1, 1}, bandwidth, costs);
  ASSERT_TRUE(plan.ok());
  EXPECT_NEAR(plan->ps.seconds_per_iteration, 0.01 + 2.5, 1e-12);
}

// Colocated servers: a conv host carries its worker's pushes and pulls to
// the other servers and its own server's share of the other workers'.
TEST_F(TrafficPlanTest, ColocatedServersShareTheirHostsLinks) {
  auto facts = DefaultModelFacts();
  ASSERT_TRUE(facts.ok()) << facts.status();
  bench::ClusterShape shape{1, 4, 1, 64};
  shape.colocated_servers = true;
  auto plan = bench::PlanTraffic(*facts, shape, 125e6, bench::ComputeCosts{});
  ASSERT_TRUE(plan.ok());
  const double p = 1630090 * 4.0, t = 18816 * 4.0, a = 3136 * 4.0;
  EXPECT_DOUBLE_EQ(plan->ps.busiest_link_bytes, 2 * p * 3 / 4);
  EXPECT_DOUBLE_EQ(plan->ps.bytes_per_iteration, 2 * 4 * p * 3 / 4);
  EXPECT_EQ(plan->ps.busiest_link, "conv worker + server");
  // The FC worker receives all four workers' activations and labels.
  EXPECT_DOUBLE_EQ(plan->stanza.busiest_link_bytes, 4 * 16 * (a + 4));
  EXPECT_EQ(plan->stanza.busiest_link, "fc worker");
  EXPECT_DOUBLE_EQ(plan->stanza.bytes_per_iteration,
                   2 * 4 * t * 3 / 4 + 4 * 16 * (a + 4) + 4 * 16 * a);
}

// Measured bytes per iteration (launcher summary) within 5% of the plan.
TEST_F(TrafficPlanTest, MeasuredBytesMatchThePlanWithinFivePercent) {
  auto facts = DefaultModelFacts();
  ASSERT_TRUE(facts.ok()) << facts.status();
  auto plan =
      bench::PlanTraffic(*facts, bench::ClusterShape{1, 2, 1, 64}, 0, bench::ComputeCosts{});
  ASSERT_TRUE(plan.ok());
  for (const std::string mode : {"ps", "stanza"}) {
    const std::string summary = dir_ + "/" + mode + ".json";
    auto [code, out] = RunCommand(kBin + "strata_launch --config " + kConfig + " --mode " + mode +
                                  " --servers 1 --conv-workers 2 --fc-workers 1 --max-steps 100 "
                                  "--evaluate=false --progress=false --summary-out " +
                                  summary);
    ASSERT_EQ(code, 0) << out;
    const double measured = Summary(summary)["bytes_per_iteration"].get<double>();
    const double planned =
        mode == "ps" ? plan->ps.bytes_per_iteration : plan->stanza.bytes_per_iteration;
    EXPECT_NEAR(measured / planned, 1.0, 0.05)
        << mode << ": measured " << measured << " bytes per iteration, planned " << planned;
  }
}

}  // namespace
}  // namespace strata
