#include "tools/fit/cost_model_fit.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/model/batch_shares.h"
#include "core/status.h"
#include "core/util/json_file.h"

namespace strata::fit {
namespace {

absl::Status FitLinkRateModel(const FitInputs& in, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const secbad::KnobCostModel model,
                          secbad::KnobCostModel::Fit(in.knob, in.mode, in.cost_samples));
  std::printf("cost model of %s (%s), iteration = local + fixed + transfer at 1 Gbit/s / rate:\n",
              in.knob.c_str(), in.mode.c_str());
  for (const auto& [value, cost] : model.values()) {
    std::printf("  %-10s local %.4fs  fixed %.4fs  transfer %.4fs\n", value.c_str(),
                cost.local_seconds, cost.fixed_seconds, cost.transfer_seconds_at_1gbit);
  }
  std::vector<secbad::LinkRateRunReadings> read;
  STRATA_ASSIGN_OR_RETURN(const secbad::LinkRateTrace trace,
                          secbad::FitLinkRateTrace(model, in.link_runs, &read));
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
      secbad::kOutlierDeviations, readings, in.link_runs.size());
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, secbad::LinkRateContext(model, trace).ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

absl::Status FitWorkerSpeedModel(const FitInputs& in, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(
      const std::shared_ptr<const secbad::WorkerSpeedContext> model,
      secbad::WorkerSpeedContext::Fit(in.mode, in.batch, in.conv_workers, in.speed_runs));
  std::printf(
      "cost model of batch.shares (%s), iteration = the slowest conv worker's rows x its "
      "seconds per row + overhead: usual %.3g ms per row, reading noise %.2f (ln); outliers "
      "%.1f%% of iterations (a conv worker's reading over %.0fx the noise from its run's mean)\n",
      in.mode.c_str(), 1000 * model->seconds_per_row(), model->noise(),
      100 * model->trace().outliers, secbad::kOutlierDeviations);
  for (const std::string& value : model->values()) {
    std::printf("  %-10s overhead %.4fs\n", value.c_str(), model->overhead_seconds(value));
  }
  STRATA_RETURN_IF_ERROR(WriteJsonFile(path, model->ToJson()));
  std::printf("cost model: %s\n", path.c_str());
  return absl::OkStatus();
}

}  // namespace

absl::Status FitAndWriteCostModel(const FitInputs& inputs, const std::string& path) {
  if (inputs.knob == kBatchSharesKnob) return FitWorkerSpeedModel(inputs, path);
  return FitLinkRateModel(inputs, path);
}

}  // namespace strata::fit
