#include "tools/bench/train_options.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/model/batch_shares.h"
#include "core/status.h"
#include "tools/netem/cpu_schedule.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {
namespace {

// A point of a cpu sweep as a --cpu-schedule from the start: "none" is no
// limit, "conv1=25%;conv0=50%" limits each process named.
std::string CpuScheduleOf(const std::string& point) {
  if (point == "none") return "";
  std::vector<std::string> entries;
  for (const std::string& limit : std::vector<std::string>(absl::StrSplit(point, ';'))) {
    entries.push_back(limit + "@0");
  }
  return absl::StrJoin(entries, ",");
}

}  // namespace

absl::StatusOr<Sweep> ParseSweep(const TrainBenchOptions& o) {
  Sweep s;
  if (o.sweep.empty()) return s;
  std::vector<std::string> kv = absl::StrSplit(o.sweep, absl::MaxSplits('=', 1));
  if (kv.size() != 2 || (kv[0] != "bandwidth" && kv[0] != "latency" && kv[0] != "cpu")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sweep ", o.sweep,
        ": use bandwidth=100mbit,1gbit,..., latency=0,0.5ms,... or cpu=none,conv1=25%,..."));
  }
  s.parameter = kv[0];
  s.values = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
  if (s.values.empty()) return absl::InvalidArgumentError("--sweep lists no values");
  for (const std::string& v : s.values) {
    if (s.parameter == "bandwidth") {
      STRATA_RETURN_IF_ERROR(ParseBandwidth(v).status());
    } else if (s.parameter == "latency") {
      STRATA_RETURN_IF_ERROR(ParseLatency(v).status());
    } else if (v != "none") {
      STRATA_RETURN_IF_ERROR(ParseCpuSchedule(CpuScheduleOf(v)).status());
    }
  }
  if (s.parameter == "cpu" && o.with_peer) {
    return absl::InvalidArgumentError(
        "--sweep cpu=... limits Strata's processes only, not the PyTorch peers': add "
        "--peer=false");
  }
  if (s.parameter == "latency" && o.cluster.bandwidth.empty()) {
    return absl::InvalidArgumentError("--sweep latency=... needs --bandwidth (the link it delays)");
  }
  return s;
}

std::vector<std::string> ClusterModesOf(const TrainBenchOptions& o) {
  std::vector<std::string> modes;
  std::copy_if(o.modes.begin(), o.modes.end(), std::back_inserter(modes),
               [](const std::string& m) { return m != "single"; });
  return modes;
}

RecordsWanted RecordsWantedBy(const TrainBenchOptions& o) {
  if (o.knob.empty() || ClusterModesOf(o).size() != 1) return RecordsWanted::kNone;
  return absl::StartsWith(o.knob, std::string(kBatchSharesKnob) + "=") ? RecordsWanted::kWorkerSpeed
                                                                       : RecordsWanted::kLinkRate;
}

absl::Status CheckOptions(const TrainBenchOptions& o, const Sweep& sweep) {
  if (o.config.empty()) return absl::InvalidArgumentError("train: --config is required");
  if (o.steps <= 0 || o.repeat <= 0 || o.threads <= 0) {
    return absl::InvalidArgumentError("train: --steps, --repeat and --threads must be > 0");
  }
  if (o.modes.empty()) return absl::InvalidArgumentError("train: --modes lists no mode");
  if (!o.device.empty() && (o.modes.size() != 1 || o.modes[0] != "single")) {
    return absl::InvalidArgumentError(
        "train: --device is for --mode single (cluster roles compute on the CPU)");
  }
  for (const std::string& mode : o.modes) {
    if (mode != "single" && mode != "ps" && mode != "stanza") {
      return absl::InvalidArgumentError(
          absl::StrCat("train: unknown mode \"", mode, "\" (use single, ps, stanza)"));
    }
  }
  if (!o.plot_out.empty() && sweep.parameter.empty()) {
    return absl::InvalidArgumentError("--plot needs a --sweep (throughput against its values)");
  }
  if (!o.cost_model_out.empty() && (o.knob.empty() || ClusterModesOf(o).size() != 1)) {
    return absl::InvalidArgumentError(
        "--cost-model-out needs --knob and one cluster mode in --modes");
  }
  if (!o.cost_model_out.empty() && RecordsWantedBy(o) == RecordsWanted::kLinkRate &&
      sweep.parameter != "bandwidth" && o.cluster.bandwidth.empty()) {
    return absl::InvalidArgumentError(
        "--cost-model-out for this knob needs --bandwidth or --sweep bandwidth=...: the model "
        "relates the knob's values to link rates");
  }
  return absl::OkStatus();
}

NetworkSetting SettingAt(const TrainBenchOptions& o, const Sweep& sweep, const std::string& value) {
  NetworkSetting net;
  net.bandwidth = o.cluster.bandwidth;
  net.latency = o.cluster.latency;
  if (sweep.parameter == "bandwidth") net.bandwidth = value;
  if (sweep.parameter == "latency") net.latency = value;
  if (sweep.parameter == "cpu") net.cpu_schedule = CpuScheduleOf(value);
  return net;
}

}  // namespace strata::bench
