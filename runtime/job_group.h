// Several jobs' workers in one process: each job runs its worker (its own
// StepLoop, model, connections and outputs) on a thread of its own, and the
// jobs share this process's device (its compute pool) through one
// DeviceArbiter (scheduler/crossover.h) under the policy chosen.
//
// OpenMP teams belong to the thread that opens them, so each job's thread
// opens its own team (its oneDNN and element-wise kernels) and does so only
// while it holds the device; under crossover and exclusive at most one team
// computes at a time, and the others' threads idle (docs/ARCHITECTURE.md,
// "Threads and sockets").
//
//   std::vector<absl::Status> done = RunJobsTogether(jobs, SharingPolicy::kCrossover, RunPsWorker);
#ifndef STRATA_RUNTIME_JOB_GROUP_H_
#define STRATA_RUNTIME_JOB_GROUP_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/worker_options.h"
#include "scheduler/crossover.h"

namespace strata {

struct JobRun {
  WorkerOptions options;  // options.device is set by RunJobsTogether
  double weight = 1.0;    // share of device time under crossover
};

// Runs `run` for every job at once, each on its own thread with its share
// of the device and a log name ending in ", job ID"; a single job runs on
// the calling thread with the device its own.
// Returns each job's status, in order; a job that fails leaves the device
// to the others, which run to their end.
std::vector<absl::Status> RunJobsTogether(
    std::vector<JobRun> jobs, SharingPolicy policy,
    const std::function<absl::Status(const WorkerOptions&)>& run);

// OK when every job succeeded; else the first failure's code and every
// failure's message, each after its job ("job 2: ..."). With one job, its
// status as it is.
absl::Status CombineJobResults(const std::vector<JobRun>& jobs,
                               const std::vector<absl::Status>& results);

}  // namespace strata

#endif  // STRATA_RUNTIME_JOB_GROUP_H_
