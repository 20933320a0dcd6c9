// ClusterHooks: what the StepLoop of every cluster worker (ps and stanza
// conv workers, FC workers) is given besides its program: the job's knobs,
// kept in step through the coordinator (CoordinatedKnobs), and the
// process's Controller (runtime/controller_choice.h: the job's on conv
// worker 0, one that changes nothing elsewhere); and the way a
// cluster worker runs its loop: one that fails tells the servers why
// before it returns (KvClient::Leave), so its peers stop at once with the
// cause rather than after a timeout.
//
//   ClusterHooks hooks(*client);
//   hooks.Attach(&loop_options);   // before the StepLoop is made
//   StepLoop loop(loop_options);
//   STRATA_ASSIGN_OR_RETURN(int64_t done, hooks.Run(loop, program));
#ifndef STRATA_RUNTIME_CLUSTER_HOOKS_H_
#define STRATA_RUNTIME_CLUSTER_HOOKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/control/controller.h"
#include "core/control/knobs.h"
#include "core/net/fc_link.h"
#include "core/net/ps_client.h"
#include "runtime/coordinated_knobs.h"
#include "runtime/step_loop.h"

namespace strata {

class ClusterHooks {
 public:
  // `client` must outlive this object. A null controller changes nothing.
  explicit ClusterHooks(PsClient& client, std::unique_ptr<Controller> controller = nullptr)
      : client_(client),
        schedule_(client.membership()),
        controller_(controller != nullptr ? std::move(controller)
                                          : std::make_unique<NoChangeController>()) {}
  // The knobs this process applies are declared here before Attach.
  JobKnobs& knobs() { return knobs_; }
  // Declares the wire format (core/net/wire_format.h, kWireFormatKnob) with its
  // value at start, "fp32" or "bf16", applied to the client's pushes and
  // pulls and, where given, to `link`'s activations (a stanza conv worker;
  // an FC worker answers in what it is sent). InvalidArgument for another
  // value.
  absl::Status DeclareWireFormat(const std::string& initial, FcLink* link = nullptr);
  // Declares how each global batch of `global` rows divides over the
  // job's `conv_workers` conv workers (core/model/batch_shares.h, kBatchSharesKnob)
  // with its value at start (the config's cluster.batch_shares, declared
  // with a weight per conv worker spelled out), and calls `apply` with the
  // rows of every conv worker, in rank order: now, and at the boundary of
  // every change. InvalidArgument for start shares that do not fit the job.
  using RowsApplier = std::function<void(const std::vector<int64_t>& rows)>;
  absl::Status DeclareBatchShares(const std::string& initial, int64_t global, int conv_workers,
                                  RowsApplier apply);
  // Points `options` at the knobs, their schedule and the controller; where
  // options->device takes turns with other jobs' (crossover), declares
  // device.sharing (scheduler/crossover.h, kDeviceSharingKnob) on it first.
  void Attach(StepLoopOptions* options);
  // loop.Run(program); on an error, the servers hear it first.
  absl::StatusOr<int64_t> Run(StepLoop& loop, StepProgram& program) {
    absl::StatusOr<int64_t> done = loop.Run(program);
    if (!done.ok()) client_.kv().Leave(done.status());
    return done;
  }

 private:
  PsClient& client_;
  JobKnobs knobs_;
  CoordinatedKnobs schedule_;
  std::unique_ptr<Controller> controller_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_CLUSTER_HOOKS_H_
