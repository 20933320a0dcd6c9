// The command-line flags that several Strata binaries share, each declared
// once (one name, one default, one help text). They come in groups; a
// binary gets a group's flags by calling its reader (each group is its own
// object file, linked only when used):
//
//   address      --coordinator --job-id --chunk-elements (servers, workers, strata_ctl)
//   token        --job-token-file (servers, workers, strata_ctl, strata_launch)
//   admin token  --admin-token-file (servers, strata_ctl, strata_launch; never
//                workers)
//   timeout      --timeout (workers, strata_ctl, strata_launch, strata_moe_member)
//   layout       --servers --conv-workers --fc-workers: 0 takes the job
//                config's cluster block (servers, strata_launch, strata_bench)
//   consistency  --consistency bsp|ssp|asp --staleness (servers, strata_launch)
//   ready        --ready-file (servers and FC workers; core/util/ready_file.h)
//   serving      --bind --advertise --bind-interface (servers and FC workers;
//                core/net/serving_address.h)
//   security     --curve-keys --curve-client --insecure, with the token group
//                (every process that opens a socket, strata_launch;
//                core/net/connection_security.h)
//   faults       --inject-faults (servers and workers; core/net/fault_injection.h)
//   checkpoint   --checkpoint-dir --checkpoint-every --keep-checkpoints --restore
//                (servers, FC workers, strata_launch; core/train/checkpoint_epochs.h)
//   knobs        --knob-lead (servers, strata_launch; server/knob_board.h)
//   controller   --controller --cost-model (conv workers, strata_launch;
//                runtime/controller_choice.h reads them)
#ifndef STRATA_FLAGS_CLUSTER_FLAGS_H_
#define STRATA_FLAGS_CLUSTER_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/model/job_config.h"
#include "core/net/fault_injection.h"
#include "core/net/serving_address.h"

namespace strata {

struct JobAddressFlags {
  std::string coordinator;
  uint64_t job_id = 1;
  int64_t chunk_elements = 0;
};
// InvalidArgument for a --chunk-elements below 1 or above 2^28.
absl::StatusOr<JobAddressFlags> JobAddressFromFlags();
std::string JobTokenFileFromFlags();
absl::Duration TimeoutFromFlags();

struct ClusterLayout {
  int servers = 1;
  int conv_workers = 1;
  int fc_workers = 1;
};
// The flags, where set (> 0), over `cluster`'s counts.
ClusterLayout LayoutFromFlags(const ClusterConfig& cluster);
// The flags over the cluster block of the job config at `config_path`
// (over the defaults when it is "" or does not load: whoever runs the job
// reports that).
ClusterLayout LayoutFromFlagsOver(const std::string& config_path);

struct ConsistencyFlags {
  std::string consistency;  // bsp, ssp, asp (checked by whoever parses it)
  int staleness = 0;
};
ConsistencyFlags ConsistencyFromFlags();

std::string ReadyFileFromFlags();

// --bind ("" when not given: the role's default), --advertise,
// --bind-interface.
ServingAddress ServingAddressFromFlags();

// Installs how every socket of this process proves itself
// (InstallConnectionSecurity): the job token (--job-token-file or
// $STRATA_JOB_TOKEN), the CURVE keys of --curve-keys, and --insecure.
// Errors name the flag and the file. Call before opening any socket.
absl::Status InstallConnectionSecurityFromFlags();
// --curve-keys ("" = plain text) and --insecure, for launchers to hand on.
std::string CurveKeysDirFromFlags();
bool InsecureFromFlags();

// The admin token (--admin-token-file, else $STRATA_ADMIN_TOKEN; "" for
// none), and the flag as given, for launchers to hand on.
absl::StatusOr<std::string> AdminTokenFromFlags();
std::string AdminTokenFileFromFlags();

// --inject-faults, parsed (no fault when not given), for the process
// named `self` ("server0", core/util/process_name.h; "" for one without a
// name, which no cut naming a receiver touches); errors name the flag.
// Cuts are timed from the spec's origin_ms, else from this call. With
// faults, the process logs what was injected into it when it exits (the
// decorators count into InjectedFaults()).
absl::StatusOr<FaultRates> FaultRatesFromFlags(const std::string& self);
FaultCounts& InjectedFaults();
// --inject-faults as a launcher hands it to the processes it starts: a
// spec with cuts and no origin_ms gets this moment as its origin, so that
// every process, and every restarted one, times the cuts from one moment.
std::string FaultSpecToHandOn();

struct CheckpointFlags {
  std::string dir;    // coordinated epochs ("" = none)
  int64_t every = 0;  // iterations between checkpoints
  int keep = 3;       // complete epochs kept
  bool restore = false;
};
CheckpointFlags CheckpointFromFlags();

// --knob-lead; InvalidArgument below 1.
absl::StatusOr<int64_t> KnobLeadFromFlags();

// What an emulated cluster's hosts go through (strata_launch; strata_bench
// hands them on): --bandwidth-schedule, --cpu-schedule, --cpu-pin, as
// given (tools/netem parses them).
struct ConditionFlags {
  std::string bandwidth_schedule;
  std::string cpu_schedule;
  std::string cpu_pin;
};
ConditionFlags ConditionsFromFlags();

struct ControllerFlags {
  std::string kind;         // --controller
  std::string cost_model;   // --cost-model
  std::string policy_file;  // --policy-file
};
ControllerFlags ControllerFromFlags();

// `path` for job `job_id` of a process that serves or runs several jobs
// (--job given more than once): "out/summary.json" becomes
// "out/summary.job2.json", "out/log" "out/log.job2"; "" stays "".
std::string PathForJob(const std::string& path, uint64_t job_id);

}  // namespace strata

#endif  // STRATA_FLAGS_CLUSTER_FLAGS_H_
