// Knobs: runtime settings of a job that may change while it runs, by name
// ("moe.pipeline_chunks").
//
// KnobCatalog: the kinds of knob this process knows. The module that owns a
// setting registers it once, with a validator and whether a change can
// alter the numbers computed: core/net the wire format (which can),
// core/model the batch shares and FC batching of the job config, scheduler/
// crossover's device sharing, moe/ its pipelining degree (which cannot).
// A program registers every module's knobs at start-up
// (startup/program_startup.h); the coordinator validates requested
// changes against the catalogue.
//
// JobKnobs: one job's knobs in one process: the values in force, the
// changes agreed through the coordinator (each from an iteration on), and
// the appliers of the process's components (an FC worker's MoE layers
// apply moe.pipeline_chunks; a conv worker only tracks it). The StepLoop
// calls ApplyUpTo at every iteration boundary, so every process of a job
// switches at the same iteration.
//
// Thread safety: KnobCatalog::Global() is filled at start-up, before any
// thread reads it. JobKnobs is driven by its loop's thread.
#ifndef STRATA_CORE_CONTROL_KNOBS_H_
#define STRATA_CORE_CONTROL_KNOBS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace strata {

struct KnobSpec {
  using Validator = std::function<absl::Status(const std::string& value)>;
  using Fit = std::function<absl::Status(const std::string& start, const std::string& value)>;
  KnobSpec() = default;
  KnobSpec(std::string name, std::string description, bool alters_math, Validator validate,
           Fit fits = nullptr)
      : name(std::move(name)),
        description(std::move(description)),
        alters_math(alters_math),
        validate(std::move(validate)),
        fits(std::move(fits)) {}

  std::string name;
  std::string description;
  // Whether a change can alter what the job computes (a wire format or a
  // batching change); false when only the speed can change.
  bool alters_math = false;
  // OK for a value the knob accepts; InvalidArgument naming the rule.
  Validator validate;
  // Unset, or OK for a value that suits the job whose processes declared
  // the knob at `start` (batch.shares: one weight per conv worker, as many
  // as the start value has); InvalidArgument naming the mismatch.
  Fit fits;
};

class KnobCatalog {
 public:
  static KnobCatalog& Global();
  // AlreadyExists when a knob of that name is registered.
  absl::Status Register(KnobSpec spec);
  // Registers `spec` unless a knob of its name is registered already: for
  // a module's Register...() function, which every program calls at start
  // and a test may call again. Names begin with their module's, so two
  // modules never share one.
  void RegisterIfNew(KnobSpec spec);
  // Null for an unknown name.
  const KnobSpec* Find(const std::string& name) const;
  // NotFound naming the known knobs, or the validator's verdict.
  absl::Status Validate(const std::string& name, const std::string& value) const;
  // Validate, then the knob's `fits` against the job's start value.
  absl::Status ValidateForJob(const std::string& name, const std::string& start,
                              const std::string& value) const;
  std::vector<std::string> names() const;  // sorted

 private:
  std::map<std::string, KnobSpec> specs_;
};

// An agreed change: `name` is `value` from iteration `from_iteration` on.
// A from_iteration of kKnobStart gives a knob's value at start.
inline constexpr int64_t kKnobStart = -1;
struct KnobChange {
  std::string name;
  std::string value;
  int64_t from_iteration = 0;
};

// A knob as the coordinator holds it: its value, the iteration it took that
// value at (kKnobStart: its value at start), and whether a change alters
// the math.
struct KnobState {
  std::string name;
  std::string value;
  int64_t since = kKnobStart;
  bool alters_math = false;
};

class JobKnobs {
 public:
  // A knob this process applies, with its value at start (from the job
  // config). `apply` is called with each new value at the boundary it
  // takes effect at; an error fails that iteration.
  void Declare(const std::string& name, std::string initial,
               std::function<absl::Status(const std::string&)> apply);
  // The knobs this process declared, with their initial values.
  const std::map<std::string, std::string>& declared() const { return declared_; }

  // Adds agreed changes; ones already known (same name and iteration) are
  // ignored, so the whole schedule may be handed over again. A start value
  // (kKnobStart) of a knob this process did not declare is taken as its
  // value; one it declared is ignored.
  void Schedule(const std::vector<KnobChange>& changes);
  // Applies, in iteration order, every scheduled change that takes effect
  // at or before `iteration` and has not been applied.
  absl::Status ApplyUpTo(int64_t iteration);
  // Values in force (declared and learned), by name.
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> declared_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::function<absl::Status(const std::string&)>> appliers_;
  // Not yet applied, by (iteration, name).
  std::map<std::pair<int64_t, std::string>, std::string> pending_;
  std::map<std::pair<int64_t, std::string>, std::string> applied_;
};

}  // namespace strata

#endif  // STRATA_CORE_CONTROL_KNOBS_H_
