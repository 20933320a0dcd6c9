#include "absl/flags/flag.h"
#include "flags/cluster_flags.h"

ABSL_FLAG(std::string, job_token_file, "",
          "file whose first line is the job token (mode 600); default: $STRATA_JOB_TOKEN (and "
          "then none: an open cluster; strata_launch makes a fresh one)");

namespace strata {

std::string JobTokenFileFromFlags() { return absl::GetFlag(FLAGS_job_token_file); }

}  // namespace strata
