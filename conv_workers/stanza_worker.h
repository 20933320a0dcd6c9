// The `stanza` mode conv worker: trains only the conv trunk. Each iteration
// it runs the trunk forward, sends the boundary activations with the labels
// to its FC worker (conv worker i -> FC worker i mod F), receives the
// activation gradients, runs the trunk backward, and exchanges the trunk's
// parameters with the servers (pushes overlapped with the rest of backward).
// The FC workers own the head, the loss, evaluation and the summary.
#ifndef STRATA_CONV_WORKERS_STANZA_WORKER_H_
#define STRATA_CONV_WORKERS_STANZA_WORKER_H_

#include "absl/status/status.h"
#include "conv_workers/ps_worker.h"

namespace strata {

absl::Status RunStanzaConvWorker(const WorkerOptions& options);

}  // namespace strata

#endif  // STRATA_CONV_WORKERS_STANZA_WORKER_H_
