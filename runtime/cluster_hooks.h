// ClusterHooks: what the StepLoop of every cluster worker (ps and stanza
// conv workers, FC workers) is given besides its program: the job's knobs,
// kept in step through the coordinator (CoordinatedKnobs), and the job's
// Controller (for now the one that changes nothing).
//
//   ClusterHooks hooks(*client);
//   hooks.Attach(&loop_options);   // before the StepLoop is made
#ifndef STRATA_RUNTIME_CLUSTER_HOOKS_H_
#define STRATA_RUNTIME_CLUSTER_HOOKS_H_

#include "core/net/ps_client.h"
#include "runtime/coordinated_knobs.h"
#include "runtime/step_loop.h"
#include "scheduler/controller.h"
#include "scheduler/knobs.h"

namespace strata {

class ClusterHooks {
 public:
  // `client` must outlive this object.
  explicit ClusterHooks(PsClient& client) : schedule_(client) {}
  // The knobs this process applies are declared here before Attach.
  JobKnobs& knobs() { return knobs_; }
  // Points `options` at the knobs, their schedule and the controller.
  void Attach(StepLoopOptions* options) {
    options->knobs = &knobs_;
    options->schedule = &schedule_;
    options->controller = &controller_;
  }

 private:
  JobKnobs knobs_;
  CoordinatedKnobs schedule_;
  NoChangeController controller_;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_CLUSTER_HOOKS_H_
