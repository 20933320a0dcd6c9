// LinkRateContext: the link-rate kind of KnobContext
// (scheduler/secbad/knob_context.h), over a KnobCostModel
// (scheduler/secbad/knob_cost_model.h): the context is ln(link rate in
// Gbit/s), read from the controller's own process's records — the rate the
// cost model says explains an iteration's communication seconds under the
// knob value in force.
//
// The cost model file may say how the runtime environment draws segments'
// rates (log-uniform over [min_rate_gbit, max_rate_gbit]), how noisy one
// iteration's reading is at 1 Gbit/s (under each value, or under every
// value) and how that noise grows with the rate (a power of it), and how
// often a reading is an outlier, anywhere between the slowest and the
// fastest rate the cost model reads (KnobCostModel::kSlowestRateGbit and
// kFastestRateGbit): "trace": {"min_rate_gbit", "max_rate_gbit", "noise",
// "value_noise": {value: noise}, "noise_slope", "outliers"}; defaults 0.1,
// 10, 0.2, none, 0 and 0. The inference expects outliers at that rate too.
#ifndef STRATA_SCHEDULER_SECBAD_LINK_RATE_CONTEXT_H_
#define STRATA_SCHEDULER_SECBAD_LINK_RATE_CONTEXT_H_

#include <map>
#include <string>
#include <vector>

#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/knob_cost_model.h"

namespace strata::secbad {

struct LinkRateTrace {
  double min_rate_gbit = 0.1;
  double max_rate_gbit = 10;
  // The standard deviation of a reading of ln(rate) on a link of 1 Gbit/s:
  // under each value value_noise names, its own; under any other, noise.
  std::map<std::string, double> value_noise;
  double noise = 0.2;
  double noise_slope = 0.0;  // d ln(noise) / d ln(rate)
  double outliers = 0.0;     // the share of readings that are outliers

  // The standard deviation of a reading of ln(rate) under `value` on a
  // link of exp(`ln_rate`) Gbit/s: its noise at 1 Gbit/s x
  // rate^noise_slope, at least kLeastReadingNoise.
  double NoiseAt(const std::string& value, double ln_rate) const;
};

// One run whose link rate held throughout: the knob value in force and the
// communication seconds of each iteration of the process a controller
// reads (start-up left out).
struct LinkRateRun {
  std::string value;
  std::vector<double> communication_seconds;
};

// What FitLinkRateTrace read of one run.
struct LinkRateRunReadings {
  std::string value;
  double median_rate_gbit = 0;
  double noise = 0;  // of ln(rate)
  size_t readings = 0;
};

// A trace's noise and outlier share fitted to such runs, as a controller
// would read them under `model`: each iteration's ln(rate) against its
// run's median. A run's noise is 1.4826 times its median absolute
// deviation (a Gaussian's standard deviation, which the outliers do not
// move), at least kLeastReadingNoise. Readings are noisier where the link
// is fast, since communication then hardly depends on the rate, and under
// one value than another (what else a value's communication waits for):
// ln(noise) is fitted by least squares as a line in the median ln(rate) of
// the run, one slope for every value (clamped to [-kSteepestNoiseSlope,
// kSteepestNoiseSlope]) and a height per value (value_noise). Where no
// value's runs span kLeastRateSpan of ln(rate), the slope is 0 and each
// value's noise its median run's. The noise for values without runs is
// the median run's at 1 Gbit/s. The outliers are the share of readings
// further than kOutlierDeviations of their run's noises from its median.
// The rates' range keeps LinkRateTrace's defaults. InvalidArgument for a
// value `model` does not know or fewer than kLeastReadings readings. With
// `read`, each run with readings leaves its own figures there, in order.
inline constexpr double kLeastReadingNoise = 0.01;
inline constexpr int kLeastReadings = 20;
inline constexpr double kLeastRateSpan = 0.5;
inline constexpr double kSteepestNoiseSlope = 2;
absl::StatusOr<LinkRateTrace> FitLinkRateTrace(const KnobCostModel& model,
                                               const std::vector<LinkRateRun>& runs,
                                               std::vector<LinkRateRunReadings>* read = nullptr);

class LinkRateContext final : public KnobContext {
 public:
  explicit LinkRateContext(KnobCostModel model, LinkRateTrace trace = {});
  // The cost model file, with an optional "trace" object (above).
  static absl::StatusOr<std::shared_ptr<const LinkRateContext>> FromJson(const nlohmann::json& json,
                                                                         const std::string& source);

  const std::string& kind() const override;
  const std::string& knob() const override { return model_.knob(); }
  const std::string& mode() const override { return model_.mode(); }
  const std::vector<std::string>& values() const override { return values_; }
  int dims() const override { return 1; }
  bool reads_every_process() const override { return false; }
  std::unique_ptr<ContextReader> NewReader() const override;
  double IterationSeconds(const std::string& value,
                          const std::vector<double>& context) const override;
  std::vector<NormalGammaPrior> Priors() const override;
  std::vector<double> SampleContext(Rng& rng) const override;
  double ObservationNoise(const std::string& value,
                          const std::vector<double>& context) const override {
    return trace_.NoiseAt(value, context[0]);
  }
  OutlierModel outliers() const override;
  std::string Describe(const std::vector<double>& context) const override;
  nlohmann::json ToJson() const override;

  const KnobCostModel& model() const { return model_; }

 private:
  KnobCostModel model_;
  LinkRateTrace trace_;
  std::vector<std::string> values_;
};

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_LINK_RATE_CONTEXT_H_
