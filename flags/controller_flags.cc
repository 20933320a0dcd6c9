#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, controller, "none",
          "ps and stanza: what re-tunes the job's knobs while it runs, from the iteration "
          "records (conv worker 0 runs it; one per job): none or static (the config's start values hold), "
          "changepoint (change-point detection and the cost model's fastest value; with "
          "--cost-model), or secbad (a trained SeCBAD policy; with --cost-model and "
          "--policy-file)");
ABSL_FLAG(std::string, cost_model, "",
          "--controller changepoint or secbad: the knob's cost model, as strata_bench train "
          "--knob ... --cost-model-out writes it; with several jobs, one for all or one per job, "
          "comma-separated");
ABSL_FLAG(std::string, policy_file, "",
          "--controller secbad: the trained policy, as strata_research secbad-runtime "
          "--policy-dir writes it; with several jobs, one for all or one per job, "
          "comma-separated");

namespace strata {

ControllerFlags ControllerFromFlags() {
  return {absl::GetFlag(FLAGS_controller), absl::GetFlag(FLAGS_cost_model),
          absl::GetFlag(FLAGS_policy_file)};
}

}  // namespace strata
