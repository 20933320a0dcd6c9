// The FC worker of stanza mode: it owns the model's head (the layers after
// model.split_after), serves the conv workers assigned to it (conv worker i
// goes to FC worker i mod F), and per iteration
//   1. gathers the boundary activations and labels of all its conv workers
//      (fc_workers/fc_server.h),
//   2. runs head forward, loss and backward over them as one batch (bigger
//      GEMMs: why few FC workers keep up with many conv workers; the
//      fc.batching knob's "gathered"), or over each conv worker's rows as
//      they arrive, summing the head's gradients ("arrival": the head
//      computes while the rest are on the wire; core/model/fc_batching.h),
//   3. returns each conv worker its slice of the activation gradients,
//      scaled so that the conv worker's trunk gradient is the mean over its
//      own samples (the servers then average over conv workers, exactly as
//      in ps mode),
//   4. updates the head with its own optimizer (F = 1: head parameters never
//      leave this process).
// FC worker 0 reports progress, evaluates the whole model after every epoch
// (pulling the trunk from the servers) and writes the summary.
//
// Bad activations (wrong shape, batch, byte count, label range, iteration,
// or a conv worker that is not ours) get an error reply naming expected and
// received values; the FC worker keeps serving the others.
#ifndef STRATA_FC_WORKERS_FC_WORKER_H_
#define STRATA_FC_WORKERS_FC_WORKER_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/net/message_endpoint.h"
#include "core/train/trainer.h"
#include "runtime/worker_options.h"

namespace strata {

struct FcWorkerOptions {
  // What every worker takes; client.rank is this FC worker's rank (the role
  // is set to FC_WORKER), parameters_out holds the whole model's parameters.
  WorkerOptions worker;
  // Where conv workers reach us (core/net/serving_address.h); the MoE expert
  // exchange binds beside it (ExpertExchangeAddress).
  ServingAddress serving;
  std::string ready_file;  // written once serving (core/util/ready_file.h); "" = none
  // Wraps each endpoint we serve on (core/net/message_endpoint.h): the one
  // conv workers reach us on and the expert exchange's inbox; unset: none.
  EndpointDecorator decorate_endpoint;
  // Coordinated checkpoints (core/train/checkpoint_epochs.h): our part of
  // every epoch, each `checkpoint_every` iterations, in `checkpoint_dir`
  // ("" = none): the head with its optimizer state (one FC worker) or our
  // experts with theirs (several; the shared head is the servers').
  // `restore`: start from our part of the newest complete epoch.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool restore = false;
};

absl::StatusOr<RunSummary> RunFcWorker(const FcWorkerOptions& options);

}  // namespace strata

#endif  // STRATA_FC_WORKERS_FC_WORKER_H_
