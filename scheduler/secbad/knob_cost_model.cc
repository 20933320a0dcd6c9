#include "scheduler/secbad/knob_cost_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/status.h"
#include "core/util/json_reader.h"

namespace strata::secbad {
namespace {

// Communication = fixed + transfer * x for x = 1 / rate, by least squares,
// neither coefficient negative.
ValueCost FitLine(const std::vector<const CostSample*>& samples) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, local = 0;
  std::set<double> rates;
  for (const CostSample* s : samples) {
    const double x = 1.0 / s->rate_gbit, y = s->communication_seconds;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
    local += s->local_seconds;
    rates.insert(s->rate_gbit);
  }
  ValueCost cost;
  cost.local_seconds = local / n;
  const double variance = sxx - sx * sx / n;
  if (rates.size() >= 2 && variance > 0) {
    cost.transfer_seconds_at_1gbit = (sxy - sx * sy / n) / variance;
    cost.fixed_seconds = (sy - cost.transfer_seconds_at_1gbit * sx) / n;
  } else {
    cost.fixed_seconds = -1;  // one rate: all of it is taken as transfer
  }
  if (cost.fixed_seconds < 0) {  // through the origin
    cost.fixed_seconds = 0;
    cost.transfer_seconds_at_1gbit = sxy / sxx;
  }
  if (cost.transfer_seconds_at_1gbit < 0) {  // the link made no difference
    cost.transfer_seconds_at_1gbit = 0;
    cost.fixed_seconds = sy / n;
  }
  return cost;
}

}  // namespace

absl::StatusOr<KnobCostModel> KnobCostModel::Fit(std::string knob, std::string mode,
                                                 const std::vector<CostSample>& samples) {
  if (samples.empty()) return absl::InvalidArgumentError("cost model: no measured iterations");
  std::map<std::string, std::vector<const CostSample*>> by_value;
  for (const CostSample& s : samples) {
    if (!(s.rate_gbit > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("cost model: ", knob, "=", s.value,
                                                     " measured at a link rate of ", s.rate_gbit,
                                                     " Gbit/s (a rate must be > 0)"));
    }
    if (s.local_seconds < 0 || s.communication_seconds < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cost model: ", knob, "=", s.value, " has negative seconds"));
    }
    by_value[s.value].push_back(&s);
  }
  if (by_value.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cost model: ", knob, " was measured at one value only; a controller needs two or more"));
  }
  KnobCostModel model;
  model.knob_ = std::move(knob);
  model.mode_ = std::move(mode);
  for (const auto& [value, of_value] : by_value) model.values_[value] = FitLine(of_value);
  return model;
}

absl::StatusOr<KnobCostModel> KnobCostModel::FromJson(const nlohmann::json& json,
                                                      const std::string& source) {
  KnobCostModel model;
  JsonObjectReader top(json, source);
  STRATA_RETURN_IF_ERROR(top.Required("knob", &model.knob_));
  STRATA_RETURN_IF_ERROR(top.Required("mode", &model.mode_));
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json* values, top.Child("values"));
  STRATA_RETURN_IF_ERROR(top.Finish());
  if (!values->is_object() || values->size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(top.ChildPath("values"), ": expected an object with two or more knob values"));
  }
  for (const auto& [value, fields] : values->items()) {
    JsonObjectReader r(fields, top.ChildPath("values") + "." + value);
    float local = 0, fixed = 0, transfer = 0;
    STRATA_RETURN_IF_ERROR(r.Required("local_seconds", &local));
    STRATA_RETURN_IF_ERROR(r.Required("fixed_seconds", &fixed));
    STRATA_RETURN_IF_ERROR(r.Required("transfer_seconds_at_1gbit", &transfer));
    STRATA_RETURN_IF_ERROR(r.Finish());
    if (local < 0 || fixed < 0 || transfer < 0 || !std::isfinite(local + fixed + transfer)) {
      return absl::InvalidArgumentError(
          absl::StrCat(top.ChildPath("values"), ".", value, ": seconds must be finite and >= 0"));
    }
    model.values_[value] = {local, fixed, transfer};
  }
  return model;
}

nlohmann::json KnobCostModel::ToJson() const {
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [value, cost] : values_) {
    values[value] = {{"local_seconds", cost.local_seconds},
                     {"fixed_seconds", cost.fixed_seconds},
                     {"transfer_seconds_at_1gbit", cost.transfer_seconds_at_1gbit}};
  }
  return {{"knob", knob_}, {"mode", mode_}, {"values", values}};
}

double KnobCostModel::IterationSeconds(const std::string& value, double rate_gbit) const {
  const ValueCost& c = values_.at(value);
  return c.local_seconds + c.fixed_seconds + c.transfer_seconds_at_1gbit / rate_gbit;
}

double KnobCostModel::InferRate(const std::string& value, double communication_seconds) const {
  const ValueCost& c = values_.at(value);
  const double excess = communication_seconds - c.fixed_seconds;
  if (c.transfer_seconds_at_1gbit <= 0 ||
      excess * kFastestRateGbit <= c.transfer_seconds_at_1gbit) {
    return kFastestRateGbit;
  }
  return std::clamp(c.transfer_seconds_at_1gbit / excess, kSlowestRateGbit, kFastestRateGbit);
}

std::string KnobCostModel::Best(double rate_gbit) const {
  std::string best;
  double best_seconds = 0;
  for (const auto& [value, cost] : values_) {
    const double t = IterationSeconds(value, rate_gbit);
    if (best.empty() || t < best_seconds) {
      best = value;
      best_seconds = t;
    }
  }
  return best;
}

}  // namespace strata::secbad
