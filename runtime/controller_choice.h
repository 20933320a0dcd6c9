// ControllerChoice: which Controller (core/control/controller.h) a job runs,
// from --controller, --cost-model and --policy-file, read and checked when
// the process starts, before it connects to anything:
//
//   none, static  nothing changes: every knob keeps the job config's start
//                 value (the default)
//   changepoint   scheduler/secbad/changepoint_controller.h over the cost
//                 model in --cost-model (the JSON `strata_bench train
//                 --knob ... --cost-model-out` writes; link-rate or
//                 worker-speed, scheduler/secbad/knob_context.h)
//   secbad        scheduler/secbad/secbad_controller.h: the policy in
//                 --policy-file (`strata_research secbad-runtime` trains one)
//                 over the knob the cost model in --cost-model describes
//
// Conv worker 0 runs the chosen controller on its own iteration records
// (and, for a context that reads every process's, on the others' the
// coordinator relays); every other process of the job runs none (the
// coordinator agrees the changes it proposes with all of them). Where
// several jobs share the processes, each job has a controller of its own
// (ChooseControllers), fed its own records and agreeing its changes with
// its own coordinator.
#ifndef STRATA_RUNTIME_CONTROLLER_CHOICE_H_
#define STRATA_RUNTIME_CONTROLLER_CHOICE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/control/controller.h"
#include "scheduler/secbad/knob_context.h"
#include "scheduler/secbad/knob_policy.h"

namespace strata {

struct ControllerChoice {
  std::string kind = "none";
  std::shared_ptr<const secbad::KnobContext> context;  // changepoint, secbad
  std::string policy_file;                              // secbad
};

// The job a controller is chosen for.
struct ControlledJob {
  std::string mode;  // "ps" or "stanza"
  int conv_workers = 0;
  int64_t global_batch = 0;
};

// InvalidArgument for an unknown kind (naming the known ones); a cost model
// or policy given to a kind that takes none, or missing for one that needs
// it; a cost model that does not read (the field named), is fitted to
// another job than `job` (its mode, or for a worker-speed model its conv
// workers and global batch), or whose knob or values the knob catalog
// refuses (the catalog must be filled); a policy file that is corrupt, not
// a policy, or made for another knob, values or context (what differs
// named). NotFound for a file that cannot be read.
absl::StatusOr<ControllerChoice> ChooseController(const std::string& kind,
                                                  const std::string& cost_model_path,
                                                  const std::string& policy_path,
                                                  const ControlledJob& job);

// One choice per job, for --controller with the comma-separated lists of
// --cost-model and --policy-file: one file for every job, or one per job
// in `jobs`' order. InvalidArgument for a list of another length (naming
// it); each job's choice as ChooseController's, its error after "job N: "
// when there are several jobs (N from 1).
absl::StatusOr<std::vector<ControllerChoice>> ChooseControllers(
    const std::string& kind, const std::string& cost_models, const std::string& policy_files,
    const std::vector<ControlledJob>& jobs);

// The controller of the conv worker of `rank`: the chosen one for rank 0,
// one that changes nothing for the others. The choice was checked by
// ChooseController; a policy file that no longer reads is an error here.
absl::StatusOr<std::unique_ptr<Controller>> MakeController(const ControllerChoice& choice,
                                                           int rank);

}  // namespace strata

#endif  // STRATA_RUNTIME_CONTROLLER_CHOICE_H_
