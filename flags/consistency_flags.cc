#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, consistency, "bsp", "ps: bsp, ssp or asp");
ABSL_FLAG(int32_t, staleness, 2, "SSP: how many iterations a worker may run ahead of the slowest");

namespace strata {

ConsistencyFlags ConsistencyFromFlags() {
  return {absl::GetFlag(FLAGS_consistency), absl::GetFlag(FLAGS_staleness)};
}

}  // namespace strata
