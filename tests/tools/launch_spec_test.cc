// The one rendering of a strata_launch run that tools ask for
// (tools/launch/launch_spec.h).
#include "tools/launch/launch_spec.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using Argv = std::vector<std::string>;

TEST(LaunchSpecTest, ASingleRunGetsTheJobAndItsOverridesAndNoClusterFlags) {
  LaunchSpec spec;
  spec.config = "configs/fashion_mnist.json";
  spec.max_steps = 200;
  spec.threads = 2;
  spec.batch_size = 64;
  spec.evaluate = false;
  spec.progress = false;
  spec.summary_out = "/tmp/run/summary.json";
  spec.bandwidth = "1gbit";  // a cluster's condition: not for one process
  spec.records_dir = "/tmp/run/records";
  EXPECT_EQ(StrataLaunchCommand("/opt/bin", spec),
            (Argv{"/opt/bin/strata_launch", "--config", "configs/fashion_mnist.json", "--mode",
                  "single", "--max-steps", "200", "--batch-size", "64", "--threads", "2",
                  "--evaluate=false", "--progress=false", "--summary-out", "/tmp/run/summary.json",
                  "--records-dir", "/tmp/run/records"}));
}

TEST(LaunchSpecTest, ASingleRunNamesItsDeviceAndTf32) {
  LaunchSpec spec;
  spec.config = "c.json";
  spec.device = "cuda:1";
  spec.tf32 = true;
  EXPECT_EQ(StrataLaunchCommand("/opt/bin", spec),
            (Argv{"/opt/bin/strata_launch", "--config", "c.json", "--mode", "single", "--device",
                  "cuda:1", "--tf32"}));
}

TEST(LaunchSpecTest, AStanzaClusterGetsItsLayoutAndConditions) {
  LaunchSpec spec;
  spec.config = "job.json";
  spec.mode = "stanza";
  spec.servers = 2;
  spec.conv_workers = 2;
  spec.fc_workers = 1;
  spec.colocate_servers = true;
  spec.bandwidth_schedule = "1gbit@0,100mbit@30s";
  spec.latency = "0.2ms";
  spec.cpu_schedule = "conv1=25%@10s";
  spec.cpu_pin = "conv0=0,conv1=1";
  spec.knob_lead = 2;
  spec.epochs = 1000;
  spec.extra_flags = {"--controller", "changepoint"};
  EXPECT_EQ(StrataLaunchCommand("/b", spec), (Argv{"/b/strata_launch",
                                                   "--config",
                                                   "job.json",
                                                   "--mode",
                                                   "stanza",
                                                   "--epochs",
                                                   "1000",
                                                   "--servers",
                                                   "2",
                                                   "--conv-workers",
                                                   "2",
                                                   "--fc-workers",
                                                   "1",
                                                   "--colocate-servers",
                                                   "--bandwidth-schedule",
                                                   "1gbit@0,100mbit@30s",
                                                   "--latency",
                                                   "0.2ms",
                                                   "--cpu-schedule",
                                                   "conv1=25%@10s",
                                                   "--cpu-pin",
                                                   "conv0=0,conv1=1",
                                                   "--knob-lead",
                                                   "2",
                                                   "--controller",
                                                   "changepoint"}));
}

TEST(LaunchSpecTest, SeveralJobsShareOnePsClusterUnderAPolicy) {
  LaunchSpec spec;
  spec.jobs = {"a.json", "b.json"};
  spec.policy = "crossover";
  spec.weights = "1,3";
  spec.mode = "ps";
  spec.fc_workers = 4;  // ps has none
  spec.bandwidth = "100mbit";
  EXPECT_EQ(StrataLaunchCommand("/b", spec),
            (Argv{"/b/strata_launch", "--jobs", "a.json,b.json", "--policy", "crossover",
                  "--weights", "1,3", "--mode", "ps", "--servers", "1", "--conv-workers", "2",
                  "--bandwidth", "100mbit", "--latency", "0"}));
}

}  // namespace
}  // namespace strata
