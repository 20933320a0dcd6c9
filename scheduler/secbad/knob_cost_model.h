// KnobCostModel: a conv worker's iteration time as a function of its
// link rate and one knob's value, fitted to measured iterations (the
// static table `strata_bench train --knob NAME=V1,V2 --sweep
// bandwidth=...` writes with --cost-model-out):
//
//   T_v(b) = local_v + fixed_v + transfer_v / b
//
// for value v at link rate b (Gbit/s): local_v the seconds that do not
// involve the link (compute, input loading), fixed_v the communication
// seconds that do not shrink as the link gets faster (latencies, the
// peers' own work, a format's conversions), transfer_v the communication
// seconds beyond those at 1 Gbit/s. The model answers the two questions a
// controller asks of a running job: which link rate explains the
// communication time just seen under the value in force (InferRate), and
// which value is fastest at a rate (Best).
//
// File (JSON):
//   {"knob": "wire.format", "mode": "ps",
//    "values": {"fp32": {"local_seconds": 0.05, "fixed_seconds": 0.01,
//                        "transfer_seconds_at_1gbit": 0.23}, ...}}
//
// Immutable once made; safe to share between threads.
#ifndef STRATA_SCHEDULER_SECBAD_KNOB_COST_MODEL_H_
#define STRATA_SCHEDULER_SECBAD_KNOB_COST_MODEL_H_

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace strata::secbad {

// One measured iteration (or the mean of several) under a knob value.
struct CostSample {
  std::string value;
  double rate_gbit = 0;              // the link rate it ran at, Gbit/s
  double local_seconds = 0;          // compute and loading
  double communication_seconds = 0;  // blocked on the link and the peers
};

struct ValueCost {
  double local_seconds = 0;
  double fixed_seconds = 0;
  double transfer_seconds_at_1gbit = 0;
};

class KnobCostModel {
 public:
  // Rates a controller reasons about: below and above them the model is
  // extrapolating too far to say anything (InferRate clamps to them).
  static constexpr double kSlowestRateGbit = 0.001;
  static constexpr double kFastestRateGbit = 1000;

  // Least squares of communication on 1 / rate per value (fixed_v and
  // transfer_v both >= 0: a fit that would make one negative is redone
  // with it at 0); local_v is the mean. InvalidArgument for no samples, a
  // rate <= 0, negative seconds, or fewer than two values (nothing to
  // choose between).
  static absl::StatusOr<KnobCostModel> Fit(std::string knob, std::string mode,
                                           const std::vector<CostSample>& samples);
  // InvalidArgument naming the field that is missing or wrong, as
  // ParseJson and JsonObjectReader word it.
  static absl::StatusOr<KnobCostModel> FromJson(const nlohmann::json& json,
                                                const std::string& source);
  nlohmann::json ToJson() const;

  const std::string& knob() const { return knob_; }
  const std::string& mode() const { return mode_; }
  const std::map<std::string, ValueCost>& values() const { return values_; }
  bool Knows(const std::string& value) const { return values_.count(value) > 0; }

  // T_v(rate); the value must be known.
  double IterationSeconds(const std::string& value, double rate_gbit) const;
  // The link rate at which `value` spends `communication_seconds` on
  // communication, clamped to [kSlowestRateGbit, kFastestRateGbit].
  double InferRate(const std::string& value, double communication_seconds) const;
  // The fastest value at `rate_gbit` (ties: the first by name).
  std::string Best(double rate_gbit) const;

 private:
  std::string knob_;
  std::string mode_;
  std::map<std::string, ValueCost> values_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_KNOB_COST_MODEL_H_
