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

const std::string kKind = "link-rate";

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

// The least-squares line through the points (x[i], y[i]); it passes
// through their centre (the means). x holds two values or more.
struct Line {
  double centre_x = 0, centre_y = 0, slope = 0;
};
Line LeastSquaresLine(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  Line line;
  for (size_t i = 0; i < x.size(); ++i) {
    line.centre_x += x[i] / n;
    line.centre_y += y[i] / n;
  }
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - line.centre_x) * (y[i] - line.centre_y);
    sxx += (x[i] - line.centre_x) * (x[i] - line.centre_x);
  }
  line.slope = sxy / sxx;
  return line;
}

}  // namespace

double LinkRateTrace::NoiseAt(double ln_rate) const {
  return std::max(kLeastReadingNoise, noise * std::exp(noise_slope * ln_rate));
}

absl::StatusOr<LinkRateTrace> FitLinkRateTrace(const KnobCostModel& model,
                                               const std::vector<LinkRateRun>& runs,
                                               std::vector<LinkRateRunReadings>* read) {
  if (read != nullptr) read->clear();
  std::vector<double> noises, rates;  // each run's noise and median, ln(rate)
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
    noises.push_back(noise);
    rates.push_back(centre);
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
  if (*std::max_element(rates.begin(), rates.end()) -
          *std::min_element(rates.begin(), rates.end()) <
      kLeastRateSpan) {
    trace.noise = Median(noises);
  } else {
    std::vector<double> ln_noises;
    for (double noise : noises) ln_noises.push_back(std::log(noise));
    const Line line = LeastSquaresLine(rates, ln_noises);
    // A clamped slope turns the line about its centre, where the runs are.
    trace.noise_slope = std::clamp(line.slope, -kSteepestNoiseSlope, kSteepestNoiseSlope);
    trace.noise = std::exp(line.centre_y - trace.noise_slope * line.centre_x);
  }
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
  return std::make_shared<const LinkRateContext>(std::move(model), trace);
}

const std::string& LinkRateContext::kind() const { return kKind; }

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
  j["context"] = kKind;
  j["trace"] = {{"min_rate_gbit", trace_.min_rate_gbit},
                {"max_rate_gbit", trace_.max_rate_gbit},
                {"noise", trace_.noise},
                {"noise_slope", trace_.noise_slope},
                {"outliers", trace_.outliers}};
  return j;
}

}  // namespace strata::secbad
