// strata_launch --slurm: one task of a Slurm job step becomes one process
// of the cluster. `srun strata_launch --slurm --config job.json` inside an
// allocation (tools/cloud/slurm/strata.sbatch) starts every role at once;
// nothing is started by hand and nothing but Slurm manages the processes.
//
// Each task reads its place from Slurm's environment (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, SLURM_JOB_NODELIST, SLURMD_NODENAME) and
// becomes, by task id:
//
//   [0, S)          server 0..S-1 (server 0 is the coordinator)
//   [S, S+F)        FC worker 0..F-1 (stanza mode)
//   [S+F, NTASKS)   conv worker 0..N-1, N = NTASKS - S - F
//
// The coordinator is server 0 on the allocation's first host (Slurm places
// task 0 there), at port_base; $STRATA_COORDINATOR overrides it. Every
// serving task binds 0.0.0.0 on ports_per_task ports of its own above
// port_base (by SLURM_LOCALID, so tasks sharing a host never collide) and
// advertises its host's address as Slurm knows it (NodeAddr). The job
// token comes from $STRATA_JOB_TOKEN (or --job-token-file), made once per
// job by whoever starts the step; a task never makes its own. With a GPU
// on the host and no binding from Slurm, task i of the host gets GPU
// i mod GPUs (CUDA_VISIBLE_DEVICES).
//
// The task then replaces itself with the role's process (exec), so srun's
// signals and exit status are the role's own: `srun --kill-on-bad-exit=1`
// ends the step, non-zero, as soon as any role fails.
#ifndef STRATA_TOOLS_LAUNCH_SLURM_TASK_H_
#define STRATA_TOOLS_LAUNCH_SLURM_TASK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/launch/cluster_launch_options.h"

namespace strata {

// Where this task sits in its job step.
struct SlurmTask {
  int procid = 0;
  int ntasks = 0;
  int localid = 0;  // index among the tasks on this host
  std::string job_id;
  std::string node;                // this host's Slurm name
  std::vector<std::string> nodes;  // the allocation's hosts, in order
  int cpus_per_task = 0;           // SLURM_CPUS_PER_TASK, 0 when unset
};

// FailedPrecondition naming the variable when a Slurm one is missing (run
// outside `srun`); expands SLURM_JOB_NODELIST with `scontrol show hostnames`.
absl::StatusOr<SlurmTask> SlurmTaskFromEnvironment();

struct SlurmLaunchOptions {
  int port_base = 29500;   // the coordinator's port; tasks bind above it
  int ports_per_task = 4;  // a server or FC worker binds up to two
  std::string log_dir;     // each role's output in LOG_DIR/<role>-<rank>.log; "" = srun's
  // The admin token's file ("" = $STRATA_ADMIN_TOKEN), read by server
  // tasks alone: a worker task neither reads it nor hands it on.
  std::string admin_token_file;
};

// What task `procid` of `ntasks` is.
struct TaskRole {
  std::string kind;  // "server", "fc_worker" or "conv_worker"
  int rank = 0;
};
// InvalidArgument when the tasks cannot hold the layout's servers and FC
// workers and at least one conv worker.
absl::StatusOr<TaskRole> RoleOfTask(int procid, int ntasks, int servers, int fc_workers);

// What `task` runs in the cluster of `o`: its role and command line, given
// the coordinator address and the address this host advertises. The task
// count decides the conv workers (every job's batch must divide over
// them); each process gets the CPUs Slurm gave its task: SLURM_CPUS_PER_TASK
// threads, else 1.
struct SlurmTaskProcess {
  TaskRole role;
  std::vector<std::string> argv;
};
absl::StatusOr<SlurmTaskProcess> SlurmTaskCommand(ClusterLaunchOptions o, const SlurmTask& task,
                                                  const SlurmLaunchOptions& slurm,
                                                  const std::string& coordinator,
                                                  const std::string& advertise);

// Becomes this task's process (exec; returns only with the reason it could
// not): the coordinator and this host's address resolved through Slurm,
// the GPU bound, the output sent to the role's log.
absl::Status RunSlurmTask(const ClusterLaunchOptions& o, const SlurmLaunchOptions& slurm);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_SLURM_TASK_H_
