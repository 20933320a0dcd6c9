// Controller: sees every iteration's record (core/control/iteration_record.h)
// and may propose knob changes (core/control/knobs.h). The StepLoop
// (runtime/step_loop.h) calls Observe after each iteration on the loop's
// thread and sends what it proposes to the job's coordinator, which agrees
// the iteration every process of the job applies it at. A controller only
// proposes: a change takes effect when the coordinator has scheduled it.
#ifndef STRATA_CORE_CONTROL_CONTROLLER_H_
#define STRATA_CORE_CONTROL_CONTROLLER_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/control/iteration_record.h"

namespace strata {

// "name=value": a requested knob change, not yet scheduled.
struct KnobProposal {
  std::string name;
  std::string value;
};

// Something a controller found or did, for the log and the job's summary.
struct ControllerEvent {
  int64_t iteration = 0;  // the record it followed
  std::string kind;       // "change point", "proposal"
  std::string detail;     // "link about 0.10 Gbit/s since iteration 58"
};

class Controller {
 public:
  virtual ~Controller() = default;
  // A record of an iteration: its own process's, or (when it reads every
  // process's) another process's as the coordinator relayed it, a few
  // iterations late (process, iteration, completed, the seconds and rows
  // only).
  virtual std::vector<KnobProposal> Observe(const IterationRecord& record) = 0;
  // Whether it reads every process's records, not only its own.
  virtual bool reads_every_process() const { return false; }
  // Everything found and done so far, oldest first (the StepLoop writes
  // each new one beside the iteration records).
  virtual const std::vector<ControllerEvent>& events() const;
};

// A controller event as a line of the records file:
// {"event":"controller","process":...,"iteration":...,"kind":...,"detail":...}.
nlohmann::json ControllerEventJson(const std::string& process, const ControllerEvent& event);

// Leaves every knob as it is.
class NoChangeController final : public Controller {
 public:
  std::vector<KnobProposal> Observe(const IterationRecord&) override { return {}; }
};

}  // namespace strata

#endif  // STRATA_CORE_CONTROL_CONTROLLER_H_
