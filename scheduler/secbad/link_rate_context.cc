#include "scheduler/secbad/link_rate_context.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status.h"
#include "core/util/json_reader.h"
#include "core/util/statistics.h"

namespace strata::secbad {
namespace {

const std::string kLinkRateKind = "link-rate";

// ln(rate) of the conv worker's own iterations under a value the model
// knows; the first iteration (start-up: connections, first pulls) is not
// one.
class LinkRateReader final : public ContextReader {
 public:
  explicit LinkRateReader(const KnobCostModel& model) : model_(model) {}
  std::optional<ContextObservation> Take(const IterationRecord& record) override {
    if (!record.completed) return std::nullopt;
    if (!started_) {
      started_ = true;
      return std::nullopt;
    }
    const auto in_force = record.knobs.find(model_.knob());
    if (in_force == record.knobs.end() || !model_.Knows(in_force->second)) return std::nullopt;
    const double rate = model_.InferRate(in_force->second, record.communication_seconds);
    return ContextObservation{record.iteration, {std::log(rate)}, in_force->second};
  }

 private:
  const KnobCostModel& model_;
  bool started_ = false;
};

// One run's noise of ln(rate) at its median ln(rate), under `value`.
struct RunNoise {
  std::string value;
  double ln_rate = 0;
  double noise = 0;
};

// Sets trace->noise_slope, value_noise and noise from the runs' noises
// (FitLinkRateTrace's contract): the least-squares fit of ln(noise) =
// height[value] + slope x ln(rate), whose slope is the pooled one within
// the values' runs and each height its value's mean residual.
void FitNoise(const std::vector<RunNoise>& runs, LinkRateTrace* trace) {
  std::map<std::string, std::vector<const RunNoise*>> by_value;
  for (const RunNoise& run : runs) by_value[run.value].push_back(&run);
  struct Centre {
    double ln_rate = 0, ln_noise = 0;
  };
  std::map<std::string, Centre> centres;  // each value's runs' means
  double sxy = 0, sxx = 0;
  bool spans = false;
  for (const auto& [value, mine] : by_value) {
    Centre& c = centres[value];
    const double n = static_cast<double>(mine.size());
    double lowest = mine[0]->ln_rate, highest = lowest;
    for (const RunNoise* run : mine) {
      c.ln_rate += run->ln_rate / n;
      c.ln_noise += std::log(run->noise) / n;
      lowest = std::min(lowest, run->ln_rate);
      highest = std::max(highest, run->ln_rate);
    }
    spans = spans || highest - lowest >= kLeastRateSpan;
    for (const RunNoise* run : mine) {
      sxy += (run->ln_rate - c.ln_rate) * (std::log(run->noise) - c.ln_noise);
      sxx += (run->ln_rate - c.ln_rate) * (run->ln_rate - c.ln_rate);
    }
  }
  trace->value_noise.clear();
  trace->noise_slope = spans ? std::clamp(sxy / sxx, -kSteepestNoiseSlope, kSteepestNoiseSlope) : 0;
  for (const auto& [value, mine] : by_value) {
    if (spans) {
      // A clamped slope turns the value's line about its centre.
      trace->value_noise[value] =
          std::exp(centres[value].ln_noise - trace->noise_slope * centres[value].ln_rate);
    } else {
      std::vector<double> noises;
      for (const RunNoise* run : mine) noises.push_back(run->noise);
      trace->value_noise[value] = Median(noises);
    }
  }
  std::vector<double> at_1gbit;
  for (const RunNoise& run : runs) {
    at_1gbit.push_back(run.noise * std::exp(-trace->noise_slope * run.ln_rate));
  }
  trace->noise = Median(at_1gbit);
}

}  // namespace

double LinkRateTrace::NoiseAt(const std::string& value, double ln_rate) const {
  const auto it = value_noise.find(value);
  const double at_1gbit = it == value_noise.end() ? noise : it->second;
  return std::max(kLeastReadingNoise, at_1gbit * std::exp(noise_slope * ln_rate));
}

absl::StatusOr<LinkRateTrace> FitLinkRateTrace(const KnobCostModel& model,
                                               const std::vector<LinkRateRun>& runs,
                                               std::vector<LinkRateRunReadings>* read) {
  if (read != nullptr) read->clear();
  std::vector<RunNoise> noises;  // each run's
  size_t all_readings = 0, far = 0;
  for (const LinkRateRun& run : runs) {
    if (!model.Knows(run.value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fitting the link-rate trace: the cost model of ", model.knob(),
                       " has no value \"", run.value, "\""));
    }
    if (run.communication_seconds.empty()) continue;
    std::vector<double> readings;  // ln(rate), one per iteration
    for (double seconds : run.communication_seconds) {
      readings.push_back(std::log(model.InferRate(run.value, seconds)));
    }
    const double centre = Median(readings);
    std::vector<double> deviations;  // from the run's median
    for (double r : readings) deviations.push_back(std::abs(r - centre));
    const double noise = std::max(kLeastReadingNoise, 1.4826 * Median(deviations));
    noises.push_back({run.value, centre, noise});
    if (read != nullptr) read->push_back({run.value, std::exp(centre), noise, readings.size()});
    all_readings += readings.size();
    far += static_cast<size_t>(std::count_if(deviations.begin(), deviations.end(), [&](double d) {
      return d > kOutlierDeviations * noise;
    }));
  }
  if (all_readings < static_cast<size_t>(kLeastReadings)) {
    return absl::InvalidArgumentError(absl::StrCat("fitting the link-rate trace: ", all_readings,
                                                   " readings of iterations, fewer than ",
                                                   kLeastReadings));
  }
  LinkRateTrace trace;
  FitNoise(noises, &trace);
  trace.outliers = static_cast<double>(far) / static_cast<double>(all_readings);
  return trace;
}

LinkRateContext::LinkRateContext(KnobCostModel model, LinkRateTrace trace)
    : model_(std::move(model)), trace_(trace) {
  for (const auto& [value, cost] : model_.values()) values_.push_back(value);
}

absl::StatusOr<std::shared_ptr<const LinkRateContext>> LinkRateContext::FromJson(
    const nlohmann::json& json, const std::string& source) {
  nlohmann::json costs = json;
  LinkRateTrace trace;
  if (costs.is_object()) {
    costs.erase("context");
    if (costs.contains("trace")) {
      JsonObjectReader r(costs["trace"], source + ": trace");
      STRATA_RETURN_IF_ERROR(r.Optional("min_rate_gbit", &trace.min_rate_gbit));
      STRATA_RETURN_IF_ERROR(r.Optional("max_rate_gbit", &trace.max_rate_gbit));
      STRATA_RETURN_IF_ERROR(r.Optional("noise", &trace.noise));
      STRATA_RETURN_IF_ERROR(r.Optional("noise_slope", &trace.noise_slope));
      STRATA_RETURN_IF_ERROR(r.Optional("outliers", &trace.outliers));
      if (r.Has("value_noise")) {
        STRATA_ASSIGN_OR_RETURN(const nlohmann::json* by_value, r.Child("value_noise"));
        JsonObjectReader values(*by_value, r.ChildPath("value_noise"));
        if (by_value->is_object()) {
          for (const auto& [value, noise] : by_value->items()) {
            STRATA_RETURN_IF_ERROR(values.Required(value, &trace.value_noise[value]));
          }
        }
        STRATA_RETURN_IF_ERROR(values.Finish());
      }
      STRATA_RETURN_IF_ERROR(r.Finish());
      if (!(trace.min_rate_gbit > 0) || !(trace.max_rate_gbit >= trace.min_rate_gbit) ||
          !(trace.noise > 0) || !(std::abs(trace.noise_slope) <= kSteepestNoiseSlope) ||
          !(trace.outliers >= 0 && trace.outliers < 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ": trace: rates must be > 0 with min <= max, the noise > 0, its slope in [-",
            kSteepestNoiseSlope, ", ", kSteepestNoiseSlope, "], and the outliers in [0, 1)"));
      }
      costs.erase("trace");
    }
  }
  STRATA_ASSIGN_OR_RETURN(KnobCostModel model, KnobCostModel::FromJson(costs, source));
  for (const auto& [value, noise] : trace.value_noise) {
    if (!model.Knows(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": trace.value_noise: the cost model of ", model.knob(),
                       " has no value \"", value, "\""));
    }
    if (!(noise > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": trace.value_noise: ", value, "'s noise must be > 0"));
    }
  }
  return std::make_shared<const LinkRateContext>(std::move(model), trace);
}

const std::string& LinkRateContext::kind() const { return kLinkRateKind; }

std::unique_ptr<ContextReader> LinkRateContext::NewReader() const {
  return std::make_unique<LinkRateReader>(model_);
}

double LinkRateContext::IterationSeconds(const std::string& value,
                                         const std::vector<double>& context) const {
  return model_.IterationSeconds(value, std::exp(context[0]));
}

std::vector<NormalGammaPrior> LinkRateContext::Priors() const {
  // Rates within a factor of e^3 (20) of 1 Gbit/s; one reading within
  // about a third of the segment's rate.
  return {NormalGammaPrior::For(0.0, 0.3, 3.0)};
}

OutlierModel LinkRateContext::outliers() const {
  if (trace_.outliers == 0) return {};
  return {trace_.outliers,
          {std::log(KnobCostModel::kSlowestRateGbit)},
          {std::log(KnobCostModel::kFastestRateGbit)}};
}

std::vector<double> LinkRateContext::SampleContext(Rng& rng) const {
  const double lo = std::log(trace_.min_rate_gbit), hi = std::log(trace_.max_rate_gbit);
  return {lo + (hi - lo) * rng.Uniform()};
}

std::string LinkRateContext::Describe(const std::vector<double>& context) const {
  return absl::StrFormat("link about %.3g Gbit/s", std::exp(context[0]));
}

nlohmann::json LinkRateContext::ToJson() const {
  nlohmann::json j = model_.ToJson();
  j["context"] = kLinkRateKind;
  j["trace"] = {{"min_rate_gbit", trace_.min_rate_gbit},
                {"max_rate_gbit", trace_.max_rate_gbit},
                {"noise", trace_.noise},
                {"noise_slope", trace_.noise_slope},
                {"value_noise", trace_.value_noise},
                {"outliers", trace_.outliers}};
  return j;
}

}  // namespace strata::secbad
