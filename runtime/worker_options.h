// WorkerOptions: what every worker process of a job takes (a conv worker
// in ps or stanza mode, an FC worker): the job, the connection to the
// servers, the reporting and the run limits.
#ifndef STRATA_RUNTIME_WORKER_OPTIONS_H_
#define STRATA_RUNTIME_WORKER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "core/control/device_policy.h"
#include "core/model/job_config.h"
#include "core/net/partition_plan.h"
#include "core/net/ps_client.h"
#include "core/train/trainer.h"
#include "runtime/controller_choice.h"

namespace strata {

struct WorkerOptions {
  JobConfig config;
  PsClientOptions client;
  RunOptions run;  // metrics, summary, progress, limits
  int64_t chunk_elements = kDefaultChunkElements;
  std::string parameters_out;  // worker 0: final parameters as a checkpoint file
  // Who may compute when (core/control/device_policy.h): shared with the other
  // jobs of this process (scheduler/crossover.h); null: always ours.
  DevicePolicy* device = nullptr;
  // The job's controller (--controller, --cost-model), run by conv worker 0.
  ControllerChoice controller;
};

}  // namespace strata

#endif  // STRATA_RUNTIME_WORKER_OPTIONS_H_
