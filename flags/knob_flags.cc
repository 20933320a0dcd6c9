#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(int64_t, knob_lead, 8,
          "iterations a knob lease reaches ahead: a change the controller or strata_ctl asks for "
          "takes effect within about this many iterations (smaller: sooner, more lease renewals)");

namespace strata {

absl::StatusOr<int64_t> KnobLeadFromFlags() {
  const int64_t lead = absl::GetFlag(FLAGS_knob_lead);
  if (lead < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--knob-lead ", lead, ": a lease must reach at least 1 iteration"));
  }
  return lead;
}

}  // namespace strata
