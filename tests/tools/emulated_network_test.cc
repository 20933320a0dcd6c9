// Emulated cluster networks: rates, latencies and bandwidth schedules
// parse; two emulated hosts carry the set rate, and the new one after a
// live change; a launched job's links follow its schedule, and its
// change-point controller re-tunes the wire format when they slow down;
// nothing (namespace, link, qdisc) survives teardown, a Ctrl-C of the
// launcher, or a launcher killed outright.
#include "tools/netem/emulated_network.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/link_rate_context.h"
#include "tests/support/cluster_fixture.h"
#include "tests/support/requirements.h"
#include "tools/netem/bandwidth_schedule.h"
#include "tools/netem/link_probe.h"

namespace strata {
namespace {

using testing::RunCommand;

// Namespaces need root and a kernel/container that allows them; where they
// cannot be made the tests that need them are skipped, naming the reason
// (the launcher's loopback fallback is what users get there). Empty where
// they can be made.
const std::string& WhyNoEmulation() {
  static const std::string why = []() -> std::string {
    if (::geteuid() != 0) return "not root";
    EmulatedNetworkOptions o;
    o.hosts = 1;
    const auto net = EmulatedNetwork::Create(o);
    return net.ok() ? "" : net.status().ToString();
  }();
  return why;
}

#define STRATA_SKIP_WITHOUT_NAMESPACES() \
  if (!WhyNoEmulation().empty())         \
  STRATA_SKIP_WITHOUT("netns") << "network namespaces cannot be made here: " << WhyNoEmulation()

// Everything the root namespace shows of links and qdiscs: teardown must
// leave it as it was.
std::string RootNetworkState() {
  return RunCommand("ip -o link show 2>&1; tc qdisc show 2>&1").second;
}

TEST(EmulatedNetworkTest, ParsesRatesAndLatencies) {
  EXPECT_DOUBLE_EQ(*ParseBandwidth("1gbit"), 125e6);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("100Mbit"), 12.5e6);
  EXPECT_DOUBLE_EQ(*ParseBandwidth("2.5gbit"), 312.5e6);
  EXPECT_EQ(ParseBandwidth("fast").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseBandwidth("-1gbit").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_DOUBLE_EQ(*ParseLatency("0.2ms"), 0.2);
  EXPECT_DOUBLE_EQ(*ParseLatency("50us"), 0.05);
  EXPECT_DOUBLE_EQ(*ParseLatency("0"), 0.0);
  EXPECT_EQ(ParseLatency("soon").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FormatBandwidth(125e6), "1gbit");
  EXPECT_EQ(FormatBandwidth(12.5e6), "100mbit");
}

TEST(EmulatedNetworkTest, RejectsImpossibleShapes) {
  EmulatedNetworkOptions o;
  o.hosts = 0;
  EXPECT_EQ(EmulatedNetwork::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.hosts = 2;
  o.bytes_per_second = 0;
  EXPECT_EQ(EmulatedNetwork::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EmulatedNetworkTest, TwoHostsCarryTheSetRateAndTeardownLeavesNothing) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const std::string before = RootNetworkState();
  EmulatedNetworkOptions o;
  o.hosts = 2;
  o.bytes_per_second = 12.5e6;  // 100 Mbit/s
  o.latency_ms = 1.0;
  auto net = EmulatedNetwork::Create(o);
  if (absl::IsUnimplemented(net.status())) {  // a kernel without netem: rate only
    EXPECT_NE(net.status().message().find("no netem qdisc"), std::string::npos) << net.status();
    EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
    o.latency_ms = 0;
    net = EmulatedNetwork::Create(o);
  }
  ASSERT_TRUE(net.ok()) << net.status();
  EXPECT_EQ((*net)->host_address(1), "198.18.0.2");
  const std::vector<std::string> live = EmulatedNetwork::ExistingNamespaces();
  EXPECT_NE(std::find(live.begin(), live.end(), (*net)->namespace_name(0)), live.end());
  EXPECT_NE(std::find(live.begin(), live.end(), (*net)->namespace_name(1)), live.end());

  auto m = MeasureLink(**net, 0, 1, 1.0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NEAR(m->bytes_per_second, o.bytes_per_second, 0.2 * o.bytes_per_second);
  if (o.latency_ms > 0) {
    // 1 ms one way: the round trip takes at least 2 ms, and not much more.
    EXPECT_GE(m->rtt_ms, 2.0);
    EXPECT_LT(m->rtt_ms, 10.0);
  } else {
    EXPECT_LT(m->rtt_ms, 2.0);
  }

  ASSERT_TRUE((*net)->Destroy().ok());
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
  EXPECT_EQ(RootNetworkState(), before);
}

TEST(BandwidthScheduleTest, ParsesRatesAtTimesFromTheLaunch) {
  auto s = ParseBandwidthSchedule("1gbit@0,100mbit@60s,2.5gbit@1.5m,10mbit@90500ms");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0].at_seconds, 0);
  EXPECT_EQ((*s)[0].bytes_per_second, 125e6);
  EXPECT_EQ((*s)[1].at_seconds, 60);
  EXPECT_EQ((*s)[1].rate, "100mbit");
  EXPECT_EQ((*s)[2].at_seconds, 90);
  EXPECT_EQ((*s)[2].bytes_per_second, 2.5e9 / 8);
  EXPECT_DOUBLE_EQ((*s)[3].at_seconds, 90.5);
  EXPECT_EQ(FormatBandwidthSchedule(*s), "1gbit@0s,100mbit@60s,2.5gbit@90s,10mbit@90.5s");
}

TEST(BandwidthScheduleTest, AScheduleThatDoesNotParseIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"1gbit", "entry \"1gbit\" is not RATE@TIME"},
      {"fast@0", "entry \"fast@0\": bandwidth \"fast\""},
      {"1gbit@soon", "time \"soon\" is not 0 or a number with ms, s or m"},
      {"1gbit@-5s", "time \"-5s\""},
      {"1gbit@10s", "the first entry \"1gbit@10s\" must be at 0"},
      {"1gbit@0,100mbit@60s,1gbit@60s", "entry \"1gbit@60s\" is not later than the one before"},
  };
  for (const auto& [text, why] : cases) {
    auto s = ParseBandwidthSchedule(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << text;
    EXPECT_NE(s.status().message().find(why), std::string::npos) << s.status();
  }
}

TEST(EmulatedNetworkTest, ALiveRateChangeReshapesEveryLinkInPlace) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  EmulatedNetworkOptions o;
  o.hosts = 2;
  o.bytes_per_second = 12.5e6;  // 100 Mbit/s
  auto net = EmulatedNetwork::Create(o);
  ASSERT_TRUE(net.ok()) << net.status();
  auto slow = MeasureLink(**net, 0, 1, 1.0);
  ASSERT_TRUE(slow.ok()) << slow.status();
  EXPECT_NEAR(slow->bytes_per_second, 12.5e6, 0.2 * 12.5e6);

  auto schedule = ParseBandwidthSchedule("100mbit@0,400mbit@1s");
  ASSERT_TRUE(schedule.ok());
  ScheduledRates rates(*schedule);
  ASSERT_TRUE(rates.Apply(0.5, **net).ok());
  EXPECT_EQ(rates.applied(), 1u);  // not yet due
  ASSERT_TRUE(rates.Apply(1.0, **net).ok());
  EXPECT_EQ(rates.applied(), 2u);
  EXPECT_EQ((*net)->options().bytes_per_second, 50e6);
  auto fast = MeasureLink(**net, 1, 0, 1.0);  // the other direction, both were changed
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_NEAR(fast->bytes_per_second, 50e6, 0.2 * 50e6);
  EXPECT_FALSE((*net)->SetRate(0).ok());
}

TEST(EmulatedNetworkTest, NamespacesOfAKilledOwnerAreRemovedByTheNextNetwork) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);  // `gone` no longer runs
  const std::string stale = "strata-" + std::to_string(gone) + "-0-h0";
  ASSERT_EQ(RunCommand("ip netns add " + stale).first, 0);
  EmulatedNetworkOptions o;
  o.hosts = 1;
  auto net = EmulatedNetwork::Create(o);
  ASSERT_TRUE(net.ok()) << net.status();
  const std::vector<std::string> live = EmulatedNetwork::ExistingNamespaces();
  EXPECT_EQ(std::find(live.begin(), live.end(), stale), live.end());
}

class EmulatedClusterTest : public testing::ClusterTest {};

TEST_F(EmulatedClusterTest, StanzaRunsOnEmulatedHostsAndCleansUp) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const std::string before = RootNetworkState();
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode stanza --conv-workers 2 --fc-workers 1 --max-steps 20 --evaluate=false "
                 "--progress=false --bandwidth 1gbit --summary-out " +
                 dir_ + "/summary.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("emulated network: 4 hosts (198.18.0.1-198.18.0.4), each link 1gbit"),
            std::string::npos)
      << out;
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 20);
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
  EXPECT_EQ(RootNetworkState(), before);
}

// Colocated servers: server i shares conv worker i's host, so two conv
// workers and their two servers take two hosts, and each server reaches
// its own worker without crossing the link.
TEST_F(EmulatedClusterTest, ColocatedServersShareTheirWorkersHosts) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode ps --conv-workers 2 --colocate-servers --max-steps 10 "
                 "--evaluate=false --progress=false --bandwidth 10gbit --summary-out " +
                 dir_ + "/summary.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("emulated network: 2 hosts (198.18.0.1-198.18.0.2)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("[server 1] shares memory with worker 1"), std::string::npos) << out;
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 10);
}

// As on a cluster whose hosts open one port range: every serving process
// binds 0.0.0.0 on the range and tells its peers its host's address; an FC
// worker's MoE expert exchange takes the range's next port.
TEST_F(EmulatedClusterTest, EveryProcessBindsAllInterfacesOnThePortRangeAndAdvertisesItsHost) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kMoeConfig +
                 " --mode stanza --conv-workers 2 --fc-workers 2 --servers 2 --max-steps 10 "
                 "--evaluate=false --progress=false --bandwidth 1gbit --port-range 7100-7103 "
                 "--summary-out " +
                 dir_ + "/summary.json");
  ASSERT_EQ(code, 0) << out;
  // Servers on hosts 1 and 2, FC workers on 3 and 4, conv workers on 5 and 6.
  for (const std::string line :
       {"[server 0] bound tcp://0.0.0.0:7100; peers dial tcp://198.18.0.1:7100",
        "[server 1] bound tcp://0.0.0.0:7100; peers dial tcp://198.18.0.2:7100",
        "[fc worker 0] bound tcp://0.0.0.0:7100; peers dial tcp://198.18.0.3:7100",
        "[fc worker 0] bound tcp://0.0.0.0:7101; peers dial tcp://198.18.0.3:7101",
        "[fc worker 1] bound tcp://0.0.0.0:7100; peers dial tcp://198.18.0.4:7100",
        "[fc worker 1] bound tcp://0.0.0.0:7101; peers dial tcp://198.18.0.4:7101"}) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
  }
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 10);
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
}

// A slow link that loses nothing: every answer takes long (a 6.5 MB slice
// crosses 100 Mbit/s in about half a second), but nothing crosses it twice.
// A resend timeout learnt from small answers and not backed off would
// re-request slices still crossing the link, whose answers queue behind
// each other until the server's send queue overflows. A pull the server
// holds for the other worker's pushes may be asked for again while it
// waits (a worker slowed by its host does that); the server answers it once.
TEST_F(EmulatedClusterTest, ASlowLinkThatLosesNothingCarriesNoAnswerTwice) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode ps --conv-workers 2 --max-steps 4 --evaluate=false --progress=false "
                 "--bandwidth 100mbit --summary-out " +
                 dir_ + "/summary.json");
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 4);
  EXPECT_EQ(out.find("answers came to requests already answered"), std::string::npos) << out;
  EXPECT_EQ(out.find("send queue"), std::string::npos) << out;
  // Whatever was asked again was a held pull, never a push or a slice.
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("] sent ");
    if (at == std::string::npos || line.find("to the servers again") == std::string::npos) continue;
    int sent = -1, pulls = -2;
    ASSERT_EQ(std::sscanf(line.c_str() + at + 7,
                          "%d unanswered requests to the servers again (%d of them pulls)", &sent,
                          &pulls),
              2)
        << line;
    EXPECT_EQ(sent, pulls) << line;
  }
}

TEST_F(EmulatedClusterTest, CtrlCStopsTheClusterAndRemovesTheNetwork) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  testing::Process launcher(
      {testing::kBin + "strata_launch", "--config", testing::kConfig, "--mode", "ps",
       "--conv-workers", "2", "--bandwidth", "100mbit", "--progress=false", "--evaluate=false",
       "--summary-out", dir_ + "/summary.json"},
      dir_ + "/launch.log");
  ASSERT_NE(launcher.WaitFor("emulated network: 3 hosts"), "") << launcher.log();
  ASSERT_NE(launcher.WaitFor("tcp://198.18.0.1:"), "") << launcher.log();  // server 0 serves
  launcher.Interrupt();
  EXPECT_NE(launcher.Wait(), 0);
  EXPECT_NE(launcher.log().find("interrupted"), std::string::npos) << launcher.log();
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
  EXPECT_EQ(testing::CountStrataProcesses(dir_), 0);
}

TEST_F(EmulatedClusterTest, AJobsLinksFollowItsBandwidthScheduleWhileItRuns) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  // 100 Mbit/s from the start (an iteration moves 13 MB through server 0's
  // link: about a second), 1 Gbit/s ten seconds in: the job goes on over the
  // same connections, and its iterations get faster.
  testing::Process launcher(
      {testing::kBin + "strata_launch", "--config", testing::kConfig, "--mode", "ps",
       "--conv-workers", "2", "--max-steps", "60", "--evaluate=false", "--progress=false",
       "--bandwidth-schedule", "100mbit@0,1gbit@10s", "--records-dir", dir_ + "/records",
       "--summary-out", dir_ + "/summary.json"},
      dir_ + "/launch.log");
  ASSERT_EQ(launcher.Wait(), 0) << launcher.log();
  const std::string log = launcher.log();
  EXPECT_NE(log.find("emulated network: 3 hosts"), std::string::npos) << log;
  EXPECT_NE(log.find("each link 100mbit"), std::string::npos) << log;
  EXPECT_NE(log.find("bandwidth schedule: links now 1gbit (change 1 of 1, due at 10s"),
            std::string::npos)
      << log;
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 60);
  // Conv worker 0's communication per iteration: the first iterations ran
  // at a tenth of the last ones' rate.
  std::vector<double> communication;
  std::ifstream records(dir_ + "/records/conv_worker_0.jsonl");
  for (std::string line; std::getline(records, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "iteration")
      communication.push_back(record["communication"].get<double>());
  }
  ASSERT_EQ(communication.size(), 60u);
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const double early = median({communication.begin() + 1, communication.begin() + 4});
  const double late = median({communication.end() - 10, communication.end()});
  EXPECT_GT(early, 3 * late) << "early " << early << " s, late " << late << " s";
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
}

TEST_F(EmulatedClusterTest, AScheduleThatDoesNotParseIsRefusedBeforeAnythingStarts) {
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode ps --bandwidth-schedule 1gbit@5s --summary-out " + dir_ + "/s.json");
  EXPECT_NE(code, 0);
  EXPECT_NE(
      out.find("--bandwidth-schedule \"1gbit@5s\": the first entry \"1gbit@5s\" must be at 0"),
      std::string::npos)
      << out;
  EXPECT_EQ(out.find("emulated network:"), std::string::npos) << out;
  const auto [both, both_out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode ps --bandwidth 1gbit --bandwidth-schedule 1gbit@0 --summary-out " + dir_ +
                 "/s.json");
  EXPECT_NE(both, 0);
  EXPECT_NE(both_out.find("--bandwidth and --bandwidth-schedule both give the link rate"),
            std::string::npos)
      << both_out;
}

// A cost model in which bf16's conversions cost more than its saved bytes
// on a fast link (fp32 wins above 0.75 Gbit/s) and less on a slow one: the
// controller must keep fp32 at 1 Gbit/s and move to bf16 once the link
// drops to 100 Mbit/s.
TEST_F(EmulatedClusterTest, TheChangepointControllerRetunesTheWireFormatWhenTheLinkDrops) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  if (testing::TimeScale() > 1) {
    GTEST_SKIP() << "the cost model describes an uninstrumented build's iterations; this one "
                    "runs "
                 << testing::TimeScale() << "x slower";
  }
  const std::string model = dir_ + "/cost.json";
  {
    std::ofstream out(model);
    out << R"({"knob": "wire.format", "mode": "ps", "values": {
      "fp32": {"local_seconds": 0.027, "fixed_seconds": 0.0, "transfer_seconds_at_1gbit": 0.145},
      "bf16": {"local_seconds": 0.028, "fixed_seconds": 0.1, "transfer_seconds_at_1gbit": 0.07}}})";
  }
  testing::Process launcher({testing::kBin + "strata_launch",
                             "--config",
                             testing::kConfig,
                             "--mode",
                             "ps",
                             "--conv-workers",
                             "2",
                             "--max-steps",
                             "70",
                             "--evaluate=false",
                             "--progress=false",
                             "--bandwidth-schedule",
                             "1gbit@0,100mbit@8s",
                             "--controller",
                             "changepoint",
                             "--cost-model",
                             model,
                             "--knob-lead",
                             "2",
                             "--records-dir",
                             dir_ + "/records",
                             "--summary-out",
                             dir_ + "/summary.json"},
                            dir_ + "/launch.log");
  ASSERT_EQ(launcher.Wait(), 0) << launcher.log();
  EXPECT_EQ(Summary(dir_ + "/summary.json")["steps"], 70);
  std::vector<double> communication;
  std::vector<std::string> format;
  std::vector<nlohmann::json> events;
  std::ifstream records(dir_ + "/records/conv_worker_0.jsonl");
  for (std::string line; std::getline(records, line);) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record["event"] == "iteration") {
      communication.push_back(record["communication"].get<double>());
      format.push_back(record["knobs"]["wire.format"].get<std::string>());
    } else if (record["event"] == "controller") {
      events.push_back(record);
    }
  }
  ASSERT_EQ(communication.size(), 70u);
  // The first iteration on the slow link: fp32's communication grows tenfold.
  size_t slow = 0;
  for (size_t i = 2; i < communication.size() && slow == 0; ++i) {
    if (communication[i] > 4 * communication[1] && format[i] == "fp32") slow = i;
  }
  ASSERT_GT(slow, 5u) << launcher.log();
  ASSERT_LT(slow, 60u) << launcher.log();
  // fp32 until then, then bf16 within 5 iterations, to the end.
  for (size_t i = 0; i < slow; ++i) EXPECT_EQ(format[i], "fp32") << "iteration " << i;
  const size_t switched = std::find(format.begin() + slow, format.end(), "bf16") - format.begin();
  EXPECT_LE(switched - slow, 5u) << "slow from " << slow << ", bf16 from " << switched;
  for (size_t i = switched; i < format.size(); ++i) EXPECT_EQ(format[i], "bf16") << i;
  // One proposal, after the change point it follows; both logged.
  int proposals = 0;
  for (const nlohmann::json& e : events) {
    EXPECT_EQ(e["process"], "conv worker 0");
    if (e["kind"] != "proposal") continue;
    ++proposals;
    EXPECT_GE(e["iteration"].get<size_t>(), slow);
    EXPECT_NE(e["detail"].get<std::string>().find("wire.format=bf16"), std::string::npos) << e;
  }
  EXPECT_EQ(proposals, 1);
  EXPECT_NE(launcher.log().find("controller: change point"), std::string::npos);
  EXPECT_TRUE(EmulatedNetwork::ExistingNamespaces().empty());
}

TEST_F(EmulatedClusterTest, TheTrainBenchFitsALinkRateCostModelAndItsReadingNoise) {
  STRATA_SKIP_WITHOUT_NAMESPACES();
  const std::string model = dir_ + "/fc_batching.json";
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_bench train --config " + testing::kConfig +
                 " --modes stanza --conv-workers 2 --fc-workers 1 --servers 1"
                 " --knob fc.batching=gathered,arrival --sweep bandwidth=100mbit,300mbit --steps 24"
                 " --repeat 1 --cost-model-out " +
                 model);
  ASSERT_EQ(code, 0) << out;
  // 2 values at 2 rates, 22 steady iterations each.
  EXPECT_NE(out.find("readings of ln(rate): noise "), std::string::npos) << out;
  EXPECT_NE(out.find("88 iterations of 4 runs"), std::string::npos) << out;
  const nlohmann::json fitted = nlohmann::json::parse(testing::ReadFile(model));
  EXPECT_EQ(fitted["context"], "link-rate");
  EXPECT_EQ(fitted["knob"], "fc.batching");
  EXPECT_TRUE(fitted["values"].contains("gathered") && fitted["values"].contains("arrival"));
  // Fitted, not the defaults (0.2 and 0): the spread of real iterations,
  // whatever this machine's load makes it (FitLinkRateTrace's own test
  // checks the values).
  const double noise = fitted["trace"]["noise"].get<double>();
  EXPECT_TRUE(std::isfinite(noise));
  EXPECT_GE(noise, secbad::kLeastReadingNoise);
  EXPECT_NE(noise, 0.2);
  // 100 and 300 Mbit/s are far enough apart to fit how the noise grows,
  // and each value has runs of its own.
  const double slope = fitted["trace"]["noise_slope"].get<double>();
  EXPECT_LE(std::abs(slope), secbad::kSteepestNoiseSlope);
  for (const char* value : {"gathered", "arrival"}) {
    EXPECT_GE(fitted["trace"]["value_noise"][value].get<double>(), secbad::kLeastReadingNoise)
        << value;
  }
  const double outliers = fitted["trace"]["outliers"].get<double>();
  EXPECT_GE(outliers, 0.0);
  EXPECT_LT(outliers, 1.0);
  // A cost model the runtime reads back.
  EXPECT_TRUE(secbad::KnobContextFromJson(fitted, model).ok());
}

TEST_F(EmulatedClusterTest, ABadControllerOrCostModelIsRefusedBeforeAnythingStarts) {
  const std::string launch = testing::kBin + "strata_launch --config " + testing::kConfig +
                             " --mode ps --summary-out " + dir_ + "/s.json ";
  const auto [unknown, unknown_out] = RunCommand(launch + "--controller oracle");
  EXPECT_NE(unknown, 0);
  EXPECT_NE(
      unknown_out.find("--controller oracle: unknown (use none, static, changepoint or secbad)"),
      std::string::npos)
      << unknown_out;
  const auto [single, single_out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode single --max-steps 1 --controller changepoint");
  EXPECT_NE(single, 0);
  EXPECT_NE(single_out.find("--controller needs --mode ps or stanza"), std::string::npos)
      << single_out;
  const auto [none, none_out] = RunCommand(launch + "--controller changepoint");
  EXPECT_NE(none, 0);
  EXPECT_NE(none_out.find("needs --cost-model FILE"), std::string::npos) << none_out;
  const std::string model = dir_ + "/cost.json";
  {
    std::ofstream out(model);
    out << R"({"knob": "wire.format", "mode": "stanza", "values": {
      "fp32": {"local_seconds": 0.03, "fixed_seconds": 0, "transfer_seconds_at_1gbit": 0.1},
      "fp8": {"local_seconds": 0.03, "fixed_seconds": 0, "transfer_seconds_at_1gbit": 0.02}}})";
  }
  const auto [mode, mode_out] =
      RunCommand(launch + "--controller changepoint --cost-model " + model);
  EXPECT_NE(mode, 0);
  EXPECT_NE(mode_out.find("fitted to stanza mode, but this job runs in ps mode"), std::string::npos)
      << mode_out;
  const auto [value, value_out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode stanza --summary-out " + dir_ +
                 "/s.json --controller changepoint --cost-model " + model);
  EXPECT_NE(value, 0);
  EXPECT_NE(value_out.find("the wire formats are fp32 and bf16"), std::string::npos) << value_out;
  {
    std::ofstream out(model);
    out << "{\"knob\": \"wire.format\", \"mode\": \"ps\"";
  }
  const auto [broken, broken_out] =
      RunCommand(launch + "--controller changepoint --cost-model " + model);
  EXPECT_NE(broken, 0);
  EXPECT_NE(broken_out.find(model), std::string::npos) << broken_out;
  for (const std::string& out : {unknown_out, none_out, mode_out, value_out, broken_out}) {
    EXPECT_EQ(out.find("serving"), std::string::npos) << out;
  }
}

TEST_F(EmulatedClusterTest, BadRateIsRefusedBeforeAnythingStarts) {
  const auto [code, out] =
      RunCommand(testing::kBin + "strata_launch --config " + testing::kConfig +
                 " --mode ps --bandwidth fast --summary-out " + dir_ + "/s.json");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("bandwidth \"fast\": use a number with gbit, mbit or kbit"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace strata
