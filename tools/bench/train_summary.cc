#include "tools/bench/train_summary.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {

void PrintSetting(const TrainBenchOptions& o, const Sweep& sweep, int64_t batch) {
  std::printf("strata_bench train: %s, global batch %lld, %d threads, %d steps x %d repeats\n",
              o.config.c_str(), static_cast<long long>(batch), o.threads, o.steps, o.repeat);
  if (ClusterModesOf(o).empty()) {
    return;
  }
  const LaunchSpec& c = o.cluster;
  const std::string network =
      sweep.parameter == "bandwidth" ? "swept"
      : c.bandwidth.empty()
          ? "loopback"
          : absl::StrCat(c.bandwidth, " per host, ",
                         c.latency == "0" ? "no added latency" : c.latency + " one way");
  std::printf("cluster: %d server(s)%s, %d conv workers, %d FC worker(s); network: %s\n", c.servers,
              c.colocate_servers ? " (each on a conv worker's host)" : "", c.conv_workers,
              c.fc_workers, network.c_str());
}

nlohmann::json FactsOf(const TrainBenchOptions& o, int64_t batch, double gflops,
                       double train_flops) {
  const LaunchSpec& c = o.cluster;
  return {{"config", o.config},
          {"batch_size", batch},
          {"threads", o.threads},
          {"steps", o.steps},
          {"repeat", o.repeat},
          {"servers", c.servers},
          {"colocated_servers", c.colocate_servers},
          {"conv_workers", c.conv_workers},
          {"fc_workers", c.fc_workers},
          {"bandwidth", c.bandwidth},
          {"latency", c.latency},
          {"sgemm_gflops", gflops},
          {"training_flops_per_image", train_flops},
          {"limit_images_per_sec", gflops * 1e9 / train_flops},
          {"title", absl::StrFormat("%s: %d conv workers, %d FC, %d server(s), batch %d",
                                    std::filesystem::path(o.config).filename().string(),
                                    c.conv_workers, c.fc_workers, c.servers, batch)}};
}

void PrintRatios(const SweepPoint& p, nlohmann::json& point_json) {
  auto find = [&p](const std::string& label) -> const ContenderResult* {
    for (const auto& c : p.contenders) {
      if (c.label == label) return &c;
    }
    return nullptr;
  };
  std::vector<std::pair<std::string, std::string>> pairs = {{"strata stanza", "strata ps"}};
  for (const auto& a : p.contenders) {
    if (!absl::StartsWith(a.label, "strata")) continue;
    for (const auto& b : p.contenders) {
      if (absl::StartsWith(b.label, "pytorch")) pairs.push_back({a.label, b.label});
    }
  }
  for (const auto& [a, b] : pairs) {
    const ContenderResult* x = find(a);
    const ContenderResult* y = find(b);
    if (x == nullptr || y == nullptr || y->median() <= 0) continue;
    const double ratio = x->median() / y->median();
    std::printf("ratio %s / %s: %.2fx\n", a.c_str(), b.c_str(), ratio);
    point_json["ratios"][a + " / " + b] = ratio;
  }
}

nlohmann::json PrintBestStatic(const SweepPoint& point,
                               const std::vector<TrainContender>& contenders,
                               const std::string& knob, const std::vector<std::string>& modes) {
  nlohmann::json best = nlohmann::json::object();
  for (const std::string& mode : modes) {
    const TrainContender* fastest = nullptr;
    double fastest_rate = 0, slowest_rate = 0;
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (contenders[i].mode != mode || contenders[i].knob_value.empty()) continue;
      const double rate = point.contenders[i].median();
      if (fastest == nullptr || rate > fastest_rate) {
        fastest = &contenders[i];
        fastest_rate = rate;
      }
      if (slowest_rate == 0 || rate < slowest_rate) slowest_rate = rate;
    }
    if (fastest == nullptr || slowest_rate <= 0) continue;
    std::printf("best static %s (%s): %s, %.0f images/s, %.2fx the slowest value\n", knob.c_str(),
                mode.c_str(), fastest->knob_value.c_str(), fastest_rate,
                fastest_rate / slowest_rate);
    best[mode] = {{"value", fastest->knob_value},
                  {"images_per_sec", fastest_rate},
                  {"over_slowest", fastest_rate / slowest_rate}};
  }
  return best;
}

fit::FitInputs FitInputsOf(const TrainBenchOptions& o, const std::string& knob, int64_t batch,
                           const BenchReport& report, const std::vector<TrainContender>& contenders,
                           fit::FitInputs recorded) {
  fit::FitInputs in = std::move(recorded);
  in.knob = knob;
  const std::vector<std::string> cluster_modes = ClusterModesOf(o);
  if (!cluster_modes.empty()) in.mode = cluster_modes.front();
  in.batch = batch;
  in.conv_workers = o.cluster.conv_workers;
  for (const SweepPoint& point : report.points) {
    const std::string rate =
        report.sweep_parameter == "bandwidth" ? point.value : o.cluster.bandwidth;
    const absl::StatusOr<double> bytes_per_second = ParseBandwidth(rate);
    const double rate_gbit = bytes_per_second.ok() ? *bytes_per_second * 8 / 1e9 : 0.0;
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (contenders[i].mode != in.mode || contenders[i].knob_value.empty()) continue;
      const std::map<std::string, double>& parts = point.contenders[i].seconds_per_iteration;
      const auto part = [&parts](const char* name) {
        const auto it = parts.find(name);
        return it == parts.end() ? 0.0 : it->second;
      };
      in.cost_samples.push_back({contenders[i].knob_value, rate_gbit,
                                 part("compute") + part("waiting"), part("communication")});
    }
  }
  return in;
}

}  // namespace strata::bench
