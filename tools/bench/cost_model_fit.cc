#include "tools/bench/cost_model_fit.h"

#include <cstdio>
#include <memory>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "core/model/batch_shares.h"
#include "core/status.h"
#include "core/util/json_file.h"
#include "scheduler/secbad/knob_cost_model.h"
#include "tools/netem/emulated_network.h"

namespace strata::bench {

absl::Status WriteCostModel(const BenchReport& report, const std::vector<double>& rates_gbit,
                            const std::vector<TrainContender>& contenders,
                            const std::vector<secbad::LinkRateRun>& link_runs,
                            const std::string& knob, const std::string& mode,
                            const std::string& path) {
  std::vector<secbad::CostSample> samples;
  for (size_t p = 0; p < report.points.size(); ++p) {
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (contenders[i].mode != mode || contenders[i].knob_value.empty()) continue;
      const std::map<std::string, double>& parts =
          report.points[p].contenders[i].seconds_per_iteration;
      auto part = [&parts](const char* name) {
        const auto it = parts.find(name);
        return it == parts.end() ? 0.0 : it->second;
      };
      samples.push_back({contenders[i].knob_value, rates_gbit[p], part("compute") + part("waiting"),
                         part("communication")});
    }
  }
  STRATA_ASSIGN_OR_RETURN(const secbad::KnobCostModel model,
                          secbad::KnobCostModel::Fit(knob, mode, samples));
  std::printf("cost model of %s (%s), iteration = local + fixed + transfer at 1 Gbit/s / rate:\n",
              knob.c_str(), mode.c_str());
  for (const auto& [value, cost] : model.values()) {
    std::printf("  %-10s local %.4fs  fixed %.4fs  transfer %.4fs\n", value.c_str(),
                cost.local_seconds, cost.fixed_seconds, cost.transfer_seconds_at_1gbit);
  }
  std::vector<secbad::LinkRateRunReadings> read;
  STRATA_ASSIGN_OR_RETURN(const secbad::LinkRateTrace trace,
                          secbad::FitLinkRateTrace(model, link_runs, &read));
  size_t readings = 0;
  for (const secbad::LinkRateRunReadings& run : read) {
    std::printf("  run of %-10s read %.3g Gbit/s (median), noise %.3f of ln(rate), %zu readings\n",
                run.value.c_str(), run.median_rate_gbit, run.noise, run.readings);
    readings += run.readings;
  }
  std::string at_1gbit;
  for (const auto& [value, noise] : trace.value_noise) {
    at_1gbit += absl::StrFormat("%s %.3f, ", value, noise);
  }
  std::printf(
      "  readings of ln(rate): noise at 1 Gbit/s %sany other value %.3f; x (rate in Gbit/s)^%.2f; "
      "outliers %.1f%% (over %.0fx the noise from their run's median; %zu iterations of %zu "
      "runs)\n",
      at_1gbit.c_str(), trace.noise, trace.noise_slope, 100 * trace.outliers,
      secbad::kOutlierDeviations, readings, link_runs.size());
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, secbad::LinkRateContext(model, trace).ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

absl::Status WriteWorkerSpeedModel(
    const std::map<std::string, std::vector<std::vector<secbad::SpeedSample>>>& runs,
    const std::string& mode, int64_t batch, int conv_workers, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const std::shared_ptr<const secbad::WorkerSpeedContext> model,
                          secbad::WorkerSpeedContext::Fit(mode, batch, conv_workers, runs));
  std::printf(
      "cost model of batch.shares (%s), iteration = the slowest conv worker's rows x its "
      "seconds per row + overhead: usual %.3g ms per row, reading noise %.2f (ln); outliers "
      "%.1f%% of iterations (a conv worker's reading over %.0fx the noise from its run's mean)\n",
      mode.c_str(), 1000 * model->seconds_per_row(), model->noise(), 100 * model->trace().outliers,
      secbad::kOutlierDeviations);
  for (const std::string& value : model->values()) {
    std::printf("  %-10s overhead %.4fs\n", value.c_str(), model->overhead_seconds(value));
  }
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, model->ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

absl::Status FitCostModel(const TrainBenchOptions& o, const std::string& knob,
                          const BenchReport& report, const std::vector<TrainContender>& contenders,
                          const CostModelInputs& inputs, int64_t batch) {
  const std::string mode = *std::find_if(o.modes.begin(), o.modes.end(),
                                         [](const std::string& m) { return m != "single"; });
  if (absl::StartsWith(o.knob, std::string(kBatchSharesKnob) + "=")) {
    return WriteWorkerSpeedModel(inputs.speed_runs, mode, batch, o.cluster.conv_workers,
                                 o.cost_model_out);
  }
  // Each point's link rate in Gbit/s.
  std::vector<double> rates_gbit;
  for (const SweepPoint& point : report.points) {
    const std::string rate =
        report.sweep_parameter == "bandwidth" ? point.value : o.cluster.bandwidth;
    rates_gbit.push_back(rate.empty() ? 0.0 : *ParseBandwidth(rate) * 8 / 1e9);
  }
  return WriteCostModel(report, rates_gbit, contenders, inputs.link_runs, knob, mode,
                        o.cost_model_out);
}

}  // namespace strata::bench
