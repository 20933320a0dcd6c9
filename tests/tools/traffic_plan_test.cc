// The analytic traffic plan against bytes measured in real clusters, and
// the plan's own arithmetic.
#include <gtest/gtest.h>

#include "core/model/job_config.h"
#include "tests/support/cluster_fixture.h"
#include "tools/bench/traffic_plan.h"

namespace strata {
namespace {

using testing::kBin;
using testing::kConfig;
using testing::RunCommand;

class TrafficPlanTest : public testing::ClusterTest {};

TEST_F(TrafficPlanTest, PlanArithmeticForTheDefaultModel) {
  auto config = LoadJobConfig(kConfig);
  ASSERT_TRUE(config.ok());
  bench::ClusterShape shape{1, 2, 1, 64};
  auto plan = bench::PlanTraffic(*config, shape, 125e6, 0);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->parameters, 1630090);
  EXPECT_EQ(plan->trunk_parameters, 18816);
  EXPECT_EQ(plan->boundary_elements, 3136);
  EXPECT_DOUBLE_EQ(plan->ps.bytes_per_iteration, 2.0 * 2 * 1630090 * 4);
  // trunk push+pull, activations + labels, activation gradients
  EXPECT_DOUBLE_EQ(plan->stanza.bytes_per_iteration,
                   2.0 * 2 * 18816 * 4 + 2 * 32 * (3136 + 1) * 4.0 + 2 * 32 * 3136 * 4.0);
  EXPECT_EQ(plan->ps.busiest_link, "server");
}

// Measured bytes per iteration (launcher summary) within 5% of the plan.
TEST_F(TrafficPlanTest, MeasuredBytesMatchThePlanWithinFivePercent) {
  auto config = LoadJobConfig(kConfig);
  ASSERT_TRUE(config.ok());
  auto plan = bench::PlanTraffic(*config, bench::ClusterShape{1, 2, 1, 64}, 0, 0);
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
