// JobIdentity: the fields of a job config that every process of one job
// must agree on — the model (each layer's type, name and shape-defining
// fields; the split), the optimizer and its schedule, the batch size and
// run length, the data set (which, not where: paths differ by host) and the
// wire format it starts with.
// A node presents it when it registers with a server or an FC worker, and
// a mismatch is refused naming the first field that differs, so a worker
// started by hand with another --batch-size is told so at once instead of
// training something else.
//
// core/util/json_difference.h names the first differing field:
//
//   const std::string mine = JobIdentity(config);
//   if (auto d = FirstDifference(mine, theirs); !d.empty()) ...  // "training.batch_size: ..."
#ifndef STRATA_CORE_MODEL_JOB_IDENTITY_H_
#define STRATA_CORE_MODEL_JOB_IDENTITY_H_

#include <string>

#include "core/model/job_config.h"

namespace strata {

// The identity fields of `config` as canonical JSON text (keys sorted).
std::string JobIdentity(const JobConfig& config);

}  // namespace strata

#endif  // STRATA_CORE_MODEL_JOB_IDENTITY_H_
