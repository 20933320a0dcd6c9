// The command-line flags every worker binary (strata_conv_worker,
// strata_fc_worker) shares, and their reading into WorkerOptions:
// --config, --threads, --evaluate, --train-limit, --summary-out, --metrics-out,
// --records-out, --parameters-out, --progress, --shared-memory, the shared
// address, token and timeout flags (core/flags/cluster_flags.h:
// --coordinator, --job-id, --chunk-elements, --job-token-file, --timeout)
// and the training overrides (core/train/training_flags.h). Each binary
// adds its own --rank.
#ifndef STRATA_RUNTIME_WORKER_FLAGS_H_
#define STRATA_RUNTIME_WORKER_FLAGS_H_

#include "absl/status/status.h"
#include "runtime/worker_options.h"

namespace strata {

// Loads --config with every override applied and fills `options` (all but
// the rank). Fails when --config is missing or invalid.
absl::Status WorkerOptionsFromFlags(WorkerOptions* options);

}  // namespace strata

#endif  // STRATA_RUNTIME_WORKER_FLAGS_H_
