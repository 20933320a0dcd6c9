// The command-line flags that choose where a process computes, shared by
// strata_launch and the worker binaries: --device (cpu, cuda, cuda:N or
// check; overrides training.device) and --tf32 (sets training.tf32).
#ifndef STRATA_FLAGS_DEVICE_FLAGS_H_
#define STRATA_FLAGS_DEVICE_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/model/job_config.h"

namespace strata {

// Applies the flags that were given to `training`. InvalidArgument naming
// --device for a device that cannot be parsed.
absl::Status ApplyDeviceFlags(TrainingConfig* training);

// The device flags of `training` as arguments for another process (none for
// the host without TF32).
std::vector<std::string> DeviceFlagArgs(const TrainingConfig& training);

}  // namespace strata

#endif  // STRATA_FLAGS_DEVICE_FLAGS_H_
