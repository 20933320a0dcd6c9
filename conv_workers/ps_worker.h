// The `ps` mode worker: the classic data-parallel parameter-server worker
// (what ps-lite and MXNet dist_sync users run). It trains the whole model
// on its shard of every global batch, pushes every gradient layer by layer
// as backward produces them (last layer first), and pulls every parameter
// for the next iteration. The model computes on training.device (a GPU,
// the checking device); the exchanges go through host copies
// (runtime/parameter_sync.h).
//
// Worker 0 initialises the servers from its seeded model, evaluates the
// test set after every epoch and writes the summary; with BSP every worker
// holds identical parameters after each pull.
#ifndef STRATA_CONV_WORKERS_PS_WORKER_H_
#define STRATA_CONV_WORKERS_PS_WORKER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/train/trainer.h"
#include "runtime/worker_options.h"

namespace strata {

// Trains until the configured steps are done; returns worker 0's summary
// (other workers return theirs without evaluation).
absl::StatusOr<RunSummary> RunPsWorker(const WorkerOptions& options);

}  // namespace strata

#endif  // STRATA_CONV_WORKERS_PS_WORKER_H_
