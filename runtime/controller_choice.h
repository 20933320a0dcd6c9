// ControllerChoice: which Controller (scheduler/controller.h) a job runs,
// from --controller and --cost-model, read and checked when the process
// starts, before it connects to anything:
//
//   none          nothing changes (the default)
//   changepoint   scheduler/secbad/changepoint_controller.h over the cost
//                 model in --cost-model (the JSON `strata_bench train
//                 --knob ... --cost-model-out` writes)
//
// Conv worker 0 runs the chosen controller on its own iteration records;
// every other process of the job runs none (the coordinator agrees the
// changes it proposes with all of them).
#ifndef STRATA_RUNTIME_CONTROLLER_CHOICE_H_
#define STRATA_RUNTIME_CONTROLLER_CHOICE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/controller.h"
#include "scheduler/secbad/knob_cost_model.h"

namespace strata {

struct ControllerChoice {
  std::string kind = "none";
  std::optional<secbad::KnobCostModel> cost_model;  // changepoint
};

// InvalidArgument for an unknown kind (naming the known ones), a cost
// model given to a kind that takes none or missing for one that needs it,
// a file that does not read as a cost model, one fitted for another mode
// than `mode`, or one whose knob or values the knob catalog refuses (the
// catalog must be filled). NotFound for a file that cannot be read.
absl::StatusOr<ControllerChoice> ChooseController(const std::string& kind,
                                                  const std::string& cost_model_path,
                                                  const std::string& mode);

// The controller of the conv worker of `rank`: the chosen one for rank 0,
// one that changes nothing for the others.
std::unique_ptr<Controller> MakeController(const ControllerChoice& choice, int rank);

}  // namespace strata

#endif  // STRATA_RUNTIME_CONTROLLER_CHOICE_H_
