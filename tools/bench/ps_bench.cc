#include "tools/bench/ps_bench.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/statistics.h"
#include "tools/bench/harness/runner.h"
#include "tools/bench/kv_contenders.h"
#include "tools/bench/machine_limits.h"

namespace strata::bench {
namespace {

// A goodput point's name, "2x64" (workers x MiB), and back.
std::string PointName(int workers, int mib) { return absl::StrCat(workers, "x", mib); }
std::pair<int, int> WorkersAndMib(const std::string& point) {
  int workers = 0, mib = 0;
  std::sscanf(point.c_str(), "%dx%d", &workers, &mib);
  return {workers, mib};
}

// Every transport at every (workers, tensor size); appends each point's
// medians to `goodput`, one entry per transport.
BenchmarkDescription GoodputBenchmark(const PsBenchOptions& o, KvSecrets& secrets,
                                      nlohmann::json& goodput) {
  BenchmarkDescription d;
  d.name = "ps";
  d.figure = {"gbps", "GB/s", "GB/s", 2};
  d.facts = {{"seconds_per_run", o.seconds_per_point}};
  d.sweep_parameter = "workers x MiB";
  for (int workers : o.workers) {
    for (int mib : o.sizes_mib) d.points.push_back(PointName(workers, mib));
  }
  d.repeat = o.repeat;
  auto rounds = std::make_shared<std::map<std::string, int64_t>>();  // each transport's last run
  for (const std::string& transport : o.transports) {
    d.contenders.push_back({transport,
                            [&o, &secrets, transport,
                             rounds](const std::string& point) -> absl::StatusOr<RunMeasurement> {
                              const auto [workers, mib] = WorkersAndMib(point);
                              STRATA_ASSIGN_OR_RETURN(const GoodputRun run,
                                                      MeasureGoodput(secrets, transport, workers,
                                                                     mib, o.seconds_per_point));
                              (*rounds)[transport] = run.rounds;
                              return FigureOnly(run.gbps);
                            }});
  }
  d.after_point = [&goodput, rounds](const SweepPoint& point) {
    const auto [workers, mib] = WorkersAndMib(point.value);
    for (const ContenderResult& c : point.contenders) {
      goodput.push_back({{"transport", c.label},
                         {"workers", workers},
                         {"mib", mib},
                         {"gbps", c.median()},
                         {"rounds", (*rounds)[c.label]}});
    }
    return absl::OkStatus();
  };
  return d;
}

// One 4 KiB pull at a time over `transport` and, over tcp and ipc, a bare
// ZeroMQ ping-pong, alternated in blocks (shm and CURVE have no bare
// counterpart here). The percentiles are over every timed round trip.
absl::StatusOr<nlohmann::json> MeasurePullLatency(const PsBenchOptions& o, KvSecrets& secrets,
                                                  const std::string& transport) {
  constexpr int kBlocks = 5, kWarmUp = 100;
  std::vector<std::unique_ptr<RoundTrip>> trips;
  STRATA_ASSIGN_OR_RETURN(trips.emplace_back(), StartStrataPulls(secrets, transport));
  const bool bare = transport == "tcp" || transport == "ipc";
  if (bare) {
    STRATA_ASSIGN_OR_RETURN(trips.emplace_back(), StartZmqPingPong(transport));
  }
  std::vector<std::vector<double>> samples(trips.size());  // microseconds

  BenchmarkDescription d;
  d.name = "ps pull latency";
  d.figure = {"p50_us", "p50 us", "us (block p50)", 1};
  d.repeat = kBlocks;
  for (size_t i = 0; i < trips.size(); ++i) {
    const std::string label = i == 0 ? "strata pull " + transport : "zeromq ping-pong";
    d.contenders.push_back({label, [&, i](const std::string&) -> absl::StatusOr<RunMeasurement> {
                              std::vector<double> block;
                              const int warm_up = samples[i].empty() ? kWarmUp : 0;
                              for (int k = 0; k < warm_up + o.latency_pulls / kBlocks; ++k) {
                                STRATA_ASSIGN_OR_RETURN(const double us,
                                                        trips[i]->MicrosecondsOfOne());
                                if (k >= warm_up) block.push_back(us);
                              }
                              samples[i].insert(samples[i].end(), block.begin(), block.end());
                              return FigureOnly(Median(block));
                            }});
  }
  std::printf("pull latency (%s), 4 KiB tensor:\n", transport.c_str());
  STRATA_RETURN_IF_ERROR(RunBenchmark(d).status());
  const double p50 = Quantile(samples[0], 0.5), p99 = Quantile(samples[0], 0.99);
  std::printf("pull latency (%s), %zu pulls: p50 %.1f us, p99 %.1f us", transport.c_str(),
              samples[0].size(), p50, p99);
  nlohmann::json latency = {{"p50", p50}, {"p99", p99}, {"pulls", samples[0].size()}};
  if (bare) {
    const double bare_p50 = Quantile(samples[1], 0.5);
    std::printf("; bare ZeroMQ ping-pong p50 %.1f us; ratio %.2fx", bare_p50, p50 / bare_p50);
    latency["zmq_ping_pong_p50"] = bare_p50;
    latency["ratio_to_zmq"] = p50 / bare_p50;
  }
  std::printf("\n\n");
  return latency;
}

// With both tcp and curve measured: CURVE's goodput as a share of plain
// tcp's (the median over the points both ran) and what it adds to a pull.
void PrintPriceOfCurve(nlohmann::json& report) {
  const auto& latency = report["pull_latency_us"];
  if (!latency.contains("tcp") || !latency.contains("curve")) return;
  std::map<std::pair<int, int>, std::map<std::string, double>> points;
  for (const auto& p : report["goodput"]) {
    points[{p["workers"].get<int>(), p["mib"].get<int>()}][p["transport"]] = p["gbps"];
  }
  std::vector<double> shares;
  for (const auto& [point, gbps] : points) {
    if (gbps.count("tcp") && gbps.count("curve"))
      shares.push_back(gbps.at("curve") / gbps.at("tcp"));
  }
  const double share = Quantile(shares, 0.5);
  const double added = latency["curve"]["p50"].get<double>() - latency["tcp"]["p50"].get<double>();
  std::printf(
      "CURVE: goodput %.2fx plain tcp's (median of %zu points), pull latency p50 %+.1f us\n", share,
      shares.size(), added);
  report["curve_price"] = {{"goodput_share", share}, {"pull_p50_added_us", added}};
}

}  // namespace

absl::Status RunPsBench(const PsBenchOptions& o) {
  for (const std::string& transport : o.transports)
    STRATA_RETURN_IF_ERROR(CheckKvTransport(transport));
  STRATA_ASSIGN_OR_RETURN(KvSecrets secrets, KvSecrets::Make());
  std::printf(
      "strata_bench ps: BSP push+pull of one tensor per worker per round, 1 server, loopback\n");
  const double memcpy_gbps = MeasureMemcpyGBps(size_t{256} << 20);
  std::printf("machine: memcpy (1 thread, 256 MiB) %.1f GB/s\n\n", memcpy_gbps);
  nlohmann::json extra = {{"memcpy_gbps", memcpy_gbps}, {"goodput", nlohmann::json::array()}};
  STRATA_ASSIGN_OR_RETURN(const BenchReport goodput,
                          RunBenchmark(GoodputBenchmark(o, secrets, extra["goodput"])));
  for (const std::string& transport : o.transports) {
    STRATA_ASSIGN_OR_RETURN(extra["pull_latency_us"][transport],
                            MeasurePullLatency(o, secrets, transport));
  }
  PrintPriceOfCurve(extra);
  return WriteReport(goodput, extra, o.json_out, o.csv_out);
}

}  // namespace strata::bench
