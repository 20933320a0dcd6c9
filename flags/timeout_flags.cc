#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(double, timeout, 60.0, "seconds to wait for a silent peer before failing");

namespace strata {

absl::Duration TimeoutFromFlags() { return absl::Seconds(absl::GetFlag(FLAGS_timeout)); }

}  // namespace strata
