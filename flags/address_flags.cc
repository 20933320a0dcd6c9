#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "core/net/partition_plan.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, coordinator, "",
          "the job's coordinator (server 0), tcp://HOST:PORT or ipc://PATH; server 0 binds it");
ABSL_FLAG(uint64_t, job_id, 1, "job id every message carries");
ABSL_FLAG(int64_t, chunk_elements, strata::kDefaultChunkElements,
          "partition-plan chunk size in floats (every process of a job must agree)");

namespace strata {

absl::StatusOr<JobAddressFlags> JobAddressFromFlags() {
  // A chunk travels as one message (and fills one shared-memory slot):
  // 2^28 floats is the 1 GiB message limit.
  constexpr int64_t kMaxChunkElements = int64_t{1} << 28;
  const int64_t chunk = absl::GetFlag(FLAGS_chunk_elements);
  if (chunk < 1 || chunk > kMaxChunkElements) {
    return absl::InvalidArgumentError(absl::StrCat("--chunk-elements ", chunk,
                                                   ": give a count from 1 to ", kMaxChunkElements));
  }
  return JobAddressFlags{absl::GetFlag(FLAGS_coordinator), absl::GetFlag(FLAGS_job_id), chunk};
}

}  // namespace strata
