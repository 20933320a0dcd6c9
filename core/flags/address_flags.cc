#include "absl/flags/flag.h"
#include "core/flags/cluster_flags.h"
#include "core/net/partition_plan.h"

ABSL_FLAG(std::string, coordinator, "",
          "the job's coordinator (server 0), tcp://HOST:PORT or ipc://PATH; server 0 binds it");
ABSL_FLAG(uint64_t, job_id, 1, "job id every message carries");
ABSL_FLAG(int64_t, chunk_elements, strata::kDefaultChunkElements,
          "partition-plan chunk size in floats (every process of a job must agree)");

namespace strata {

JobAddressFlags JobAddressFromFlags() {
  return {absl::GetFlag(FLAGS_coordinator), absl::GetFlag(FLAGS_job_id),
          absl::GetFlag(FLAGS_chunk_elements)};
}

}  // namespace strata
