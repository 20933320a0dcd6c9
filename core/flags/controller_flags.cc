#include "absl/flags/flag.h"
#include "core/flags/cluster_flags.h"

ABSL_FLAG(std::string, controller, "none",
          "ps and stanza: what re-tunes the job's knobs while it runs, on conv worker 0's "
          "iteration records: none, or changepoint (with --cost-model)");
ABSL_FLAG(std::string, cost_model, "",
          "--controller changepoint: the knob's cost model, as strata_bench train --knob ... "
          "--cost-model-out writes it");

namespace strata {

ControllerFlags ControllerFromFlags() {
  return {absl::GetFlag(FLAGS_controller), absl::GetFlag(FLAGS_cost_model)};
}

}  // namespace strata
