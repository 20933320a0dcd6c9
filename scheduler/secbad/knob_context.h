// KnobContext: what a controller of one runtime knob knows about the
// context the knob's best value depends on — SeCBAD's latent context, for
// a running job: how to read it off iteration records (one observation
// vector per iteration), and how long an iteration takes under each of the
// knob's values in a given context (the knob's cost model, fitted to
// measured iterations). Two kinds:
//
//   kind           knob (e.g.)    context, per iteration                 file
//   link-rate      wire.format    ln(link rate, Gbit/s), from conv      link_rate_context.h
//                                 worker 0's communication seconds
//   worker-speed   batch.shares   ln(seconds per row) of every conv     worker_speed_context.h
//                                 worker, from its compute over its rows
//
// The changepoint and SeCBAD controllers, and the runtime environment their
// policies train in, see a knob through this interface only.
//
//   STRATA_ASSIGN_OR_RETURN(auto context, KnobContextFromJson(json, "cost.json"));
//   auto reader = context->NewReader();
//   if (auto seen = reader->Take(record)) ... seen->values ...
//   const std::string best = context->Best(belief);
//
// A KnobContext is immutable and safe to share between threads; a reader
// is driven by one thread.
#ifndef STRATA_SCHEDULER_SECBAD_KNOB_CONTEXT_H_
#define STRATA_SCHEDULER_SECBAD_KNOB_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/control/iteration_record.h"
#include "core/util/rng.h"
#include "scheduler/secbad/observation_model.h"

namespace strata::secbad {

// What the records of one iteration showed of the context.
struct ContextObservation {
  int64_t iteration = 0;
  std::vector<double> values;  // one per dimension
  std::string in_force;        // the knob's value during the iteration ("": not known)
};

class ContextReader {
 public:
  virtual ~ContextReader() = default;
  // Takes a record (of the controller's process, or relayed from another);
  // returns the observation it completes, if any.
  virtual std::optional<ContextObservation> Take(const IterationRecord& record) = 0;
};

// Fits of a context's outlier share count a reading as an outlier when it
// lies further than this many of its run's noises from the run's centre.
inline constexpr double kOutlierDeviations = 4;

class KnobContext {
 public:
  virtual ~KnobContext() = default;
  virtual const std::string& kind() const = 0;  // "link-rate", "worker-speed"
  virtual const std::string& knob() const = 0;
  virtual const std::string& mode() const = 0;  // the cluster mode it was fitted in
  // OK, or why the fit does not describe a job of `conv_workers` conv
  // workers and a global batch of `global_batch` (either 0: not known).
  virtual absl::Status FitsJob(int conv_workers, int64_t global_batch) const {
    (void)conv_workers;
    (void)global_batch;
    return absl::OkStatus();
  }
  // The values a controller chooses among, in a fixed order.
  virtual const std::vector<std::string>& values() const = 0;
  virtual int dims() const = 0;
  // Whether it reads every process's records (else its own process's).
  virtual bool reads_every_process() const = 0;
  virtual std::unique_ptr<ContextReader> NewReader() const = 0;
  // Seconds an iteration takes under `value` (one of values()) in
  // `context` (dims() values, in the observations' units).
  virtual double IterationSeconds(const std::string& value,
                                  const std::vector<double>& context) const = 0;
  // Before a segment's first observation: what its context is believed
  // to be, per dimension.
  virtual std::vector<NormalGammaPrior> Priors() const = 0;
  // A segment's context as the traces of the runtime environment draw it.
  virtual std::vector<double> SampleContext(Rng& rng) const = 0;
  // How far one iteration's observation strays from its segment's
  // context when that is `context` and `value` (one of values()) is in
  // force (standard deviation, the observations' units).
  virtual double ObservationNoise(const std::string& value,
                                  const std::vector<double>& context) const = 0;
  // How often an observation has nothing to do with its segment's context,
  // and the range it then lies in (the observations' units); rate 0: never.
  virtual OutlierModel outliers() const { return {}; }
  // "link about 0.1 Gbit/s", for logs.
  virtual std::string Describe(const std::vector<double>& context) const = 0;
  // The cost model file (KnobContextFromJson reads it back).
  virtual nlohmann::json ToJson() const = 0;

  // The fastest value in `context` (ties: the first in values()).
  std::string Best(const std::vector<double>& context) const;
  // The position of `value` in values(); -1 when it is none of them.
  int IndexOf(const std::string& value) const;
};

// Reads a cost model file of either kind ("context" names it; files without
// one are link-rate, as strata_bench wrote them first). InvalidArgument
// naming the field that is missing or wrong.
absl::StatusOr<std::shared_ptr<const KnobContext>> KnobContextFromJson(const nlohmann::json& json,
                                                                       const std::string& source);

}  // namespace strata::secbad

#endif  // STRATA_SCHEDULER_SECBAD_KNOB_CONTEXT_H_
