#include "flags/device_flags.h"

#include "absl/flags/flag.h"
#include "core/ops/backend.h"
#include "core/status.h"

ABSL_FLAG(std::string, device, "",
          "where to compute: cpu, cuda, cuda:N or check (the checking device); overrides "
          "training.device");
ABSL_FLAG(bool, tf32, false,
          "on a GPU: TensorFloat-32 in matrix products and convolutions (sets training.tf32)");

namespace strata {

absl::Status ApplyDeviceFlags(TrainingConfig* training) {
  const std::string device = absl::GetFlag(FLAGS_device);
  if (!device.empty()) {
    STRATA_RETURN_IF_ERROR_CTX(ParseDeviceSpec(device).status(), "--device");
    training->device = device;
  }
  if (absl::GetFlag(FLAGS_tf32)) training->tf32 = true;
  return absl::OkStatus();
}

std::vector<std::string> DeviceFlagArgs(const TrainingConfig& training) {
  std::vector<std::string> args;
  if (training.device != "cpu") args.insert(args.end(), {"--device", training.device});
  if (training.tf32) args.push_back("--tf32");
  return args;
}

}  // namespace strata
