// Emulated stragglers: CPU schedules parse (and one that does not is named
// before anything starts); a limited process gets the share of a core it
// was given; a launched job's conv worker slows down while its limit holds
// and its cgroup is gone afterwards.
#include "tools/netem/cpu_schedule.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"

namespace strata {
namespace {

using testing::JsonLines;
using testing::RunCommand;

#define STRATA_SKIP_WITHOUT_LIMITS()      \
  if (!testing::WhyNoCpuLimits().empty()) \
  STRATA_SKIP_WITHOUT("cpu-limits") << "no CPU limits here: " << testing::WhyNoCpuLimits()

// CPU seconds process `pid` has used (user and system).
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;  // state .. cmajflt
  double user = 0, system = 0;
  fields >> user >> system;
  return (user + system) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

TEST(CpuScheduleTest, ParsesLimitsOfProcessesAtTimesFromTheLaunch) {
  auto s = ParseCpuSchedule("conv1=25%@0,fc0=150%@30s,conv1=none@1.5m,server0=5%@1.5m");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0].role, "conv_worker");
  EXPECT_EQ((*s)[0].rank, 1);
  EXPECT_EQ((*s)[0].cores, 0.25);
  EXPECT_EQ((*s)[1].role, "fc_worker");
  EXPECT_EQ((*s)[1].cores, 1.5);
  EXPECT_EQ((*s)[1].at_seconds, 30);
  EXPECT_FALSE((*s)[2].cores.has_value());
  EXPECT_EQ((*s)[2].at_seconds, 90);
  EXPECT_EQ((*s)[3].role, "server");
  EXPECT_EQ((*s)[3].process, "server0");
}

TEST(CpuScheduleTest, AScheduleThatDoesNotParseIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"conv1=25%", "entry \"conv1=25%\" is not PROCESS=LIMIT@TIME"},
      {"conv1@0", "entry \"conv1@0\" is not PROCESS=LIMIT@TIME"},
      {"gpu1=25%@0", "\"gpu1\" is not a process (server<rank>, conv<rank> or fc<rank>)"},
      {"conv=25%@0", "\"conv\" is not a process"},
      {"conv1=25@0", "limit \"25\" is not none or a percentage of one core from 1% up"},
      {"conv1=0%@0", "limit \"0%\""},
      {"conv1=25%@soon", "time \"soon\" is not 0 or a number with ms, s or m"},
      {"conv1=25%@10s,conv1=none@5s", "entry \"conv1=none@5s\" is earlier than the one before"},
  };
  for (const auto& [text, why] : cases) {
    auto s = ParseCpuSchedule(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << text;
    EXPECT_NE(s.status().message().find(why), std::string::npos) << s.status();
  }
}

TEST(CpuLimiterTest, ALimitedProcessGetsItsShareOfACoreAndItsGroupGoesAway) {
  STRATA_SKIP_WITHOUT_LIMITS();
  const pid_t spinner = ::fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    for (volatile uint64_t i = 0;; ++i) {
    }
  }
  std::string group;
  const std::string own_cgroup = testing::ReadFile("/proc/" + std::to_string(spinner) + "/cgroup");
  {
    auto limiter = CpuLimiter::Create();
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    ASSERT_TRUE((*limiter)->Limit("spinner", spinner, 0.2).ok());
    EXPECT_NE(testing::ReadFile("/proc/" + std::to_string(spinner) + "/cgroup"), own_cgroup);
    const double before = CpuSeconds(spinner);
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const double share = (CpuSeconds(spinner) - before) / 2;
    EXPECT_GT(share, 0.12);
    EXPECT_LT(share, 0.28);
    // Lifted: it may take a whole core again (the machine may be busy).
    ASSERT_TRUE((*limiter)->Limit("spinner", spinner, std::nullopt).ok());
    const double lifted_from = CpuSeconds(spinner);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_GT(CpuSeconds(spinner) - lifted_from, 0.4);
    // Back in the cgroup it was started in.
    EXPECT_EQ(testing::ReadFile("/proc/" + std::to_string(spinner) + "/cgroup"), own_cgroup);
    group = (*limiter)->description();
  }
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  // "cgroup v1 (/sys/fs/cgroup/cpu/strata-PID)": that group is gone.
  const std::string path = group.substr(group.find('(') + 1, group.size() - group.find('(') - 2);
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
}

TEST(CpuLimiterTest, GroupsOfALimiterKilledOutrightAreRemovedByTheNext) {
  STRATA_SKIP_WITHOUT_LIMITS();
  std::string hierarchy;
  {
    auto limiter = CpuLimiter::Create();
    ASSERT_TRUE(limiter.ok()) << limiter.status();
    const std::string d = (*limiter)->description();
    hierarchy = std::filesystem::path(d.substr(d.find('(') + 1, d.size() - d.find('(') - 2))
                    .parent_path()
                    .string();
  }
  // A process that has exited: its pid names the stale group.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  const std::string stale = hierarchy + "/strata-" + std::to_string(gone);
  ASSERT_TRUE(std::filesystem::create_directories(stale + "/conv1")) << stale;
  auto next = CpuLimiter::Create();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE(std::filesystem::exists(stale));
}

class CpuScheduleClusterTest : public testing::ClusterTest {};

TEST_F(CpuScheduleClusterTest, AConvWorkerComputesSlowerWhileItsLimitHolds) {
  STRATA_SKIP_WITHOUT_LIMITS();
  const auto [code, out] = RunCommand(
      testing::kBin + "strata_launch --config " + testing::kConfig +
      " --mode ps --servers 1 --conv-workers 2 --max-steps 60 --evaluate=false --progress=false "
      "--cpu-schedule conv1=20%@0 --records-dir " + dir_ + "/records");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("cpu schedule: conv1 limited to 0.2 cores"), std::string::npos) << out;
  auto median_compute = [&](const std::string& process) {
    std::vector<double> compute;
    for (const nlohmann::json& r : JsonLines(dir_ + "/records/" + process + ".jsonl", "iteration")) {
      if (r["iteration"] >= 10) compute.push_back(r["compute"].get<double>());
    }
    std::sort(compute.begin(), compute.end());
    return compute.empty() ? 0.0 : compute[compute.size() / 2];
  };
  EXPECT_GT(median_compute("conv_worker_1"), 2 * median_compute("conv_worker_0"));
  // Nothing of the launcher's cgroups is left.
  for (const char* hierarchy : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (!std::filesystem::is_directory(hierarchy)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(hierarchy)) {
      EXPECT_EQ(entry.path().filename().string().rfind("strata-", 0), std::string::npos)
          << entry.path();
    }
  }
}

TEST_F(CpuScheduleClusterTest, AScheduleThatDoesNotFitIsRefusedBeforeAnythingStarts) {
  for (const auto& [schedule, why] : std::vector<std::pair<std::string, std::string>>{
           {"conv1=25%", "--cpu-schedule \"conv1=25%\": entry \"conv1=25%\" is not "
                         "PROCESS=LIMIT@TIME"},
           {"conv5=25%@0", "--cpu-schedule: the cluster has no conv5 (2 conv_workers)"},
           {"fc0=25%@0", "--cpu-schedule: the cluster has no fc0 (0 fc_workers)"}}) {
    const auto [code, out] = RunCommand(testing::kBin + "strata_launch --config " +
                                        testing::kConfig +
                                        " --mode ps --conv-workers 2 --cpu-schedule " + schedule);
    EXPECT_NE(code, 0);
    EXPECT_NE(out.find(why), std::string::npos) << out;
    EXPECT_EQ(out.find("[server 0]"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace strata
