// JobSpec: what a server needs to serve a job it was not started with — the
// job's config (every override applied) and its mode — as one JSON text. A
// worker presents it in its hello; a server group that learns jobs
// (server/server_node.h) builds the job from the first one it sees, and
// every later node is checked against that job's identity as usual
// (core/model/job_identity.h).
//
//   const std::string spec = JobSpecText(config, "stanza");  // "" if config has no text
//   STRATA_ASSIGN_OR_RETURN(JobSpec job, ParseJobSpec(spec));
#ifndef STRATA_CORE_MODEL_JOB_SPEC_H_
#define STRATA_CORE_MODEL_JOB_SPEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/model/job_config.h"

namespace strata {

struct JobSpec {
  JobConfig config;
  std::string mode;  // ps or stanza
};

// `config` (its training and cluster blocks as they stand now, overrides
// included) and `mode` as JSON text; "" when `config` was not parsed from
// text (JobConfig::text), since a model built in code cannot be written.
std::string JobSpecText(const JobConfig& config, const std::string& mode);

// The spec in `text`, validated as a job config file is. InvalidArgument
// naming the field for anything malformed or unknown.
absl::StatusOr<JobSpec> ParseJobSpec(const std::string& text);

}  // namespace strata

#endif  // STRATA_CORE_MODEL_JOB_SPEC_H_
