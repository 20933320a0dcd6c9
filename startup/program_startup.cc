#include "startup/program_startup.h"

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "core/model/batch_shares.h"
#include "core/model/fc_batching.h"
#include "core/net/net_services.h"
#include "core/net/wire_format.h"
#include "core/process/process_setup.h"
#include "flags/flag_names.h"
#include "moe/moe_layer_type.h"
#include "scheduler/crossover.h"

namespace strata {

void RegisterModules() {
  RegisterNetServices();
  RegisterWireFormatKnob();
  RegisterBatchSharesKnob();
  RegisterFcBatchingKnob();
  RegisterDeviceSharingKnob();
  moe::RegisterMoe();
}

ProgramArguments StartProgram(int argc, char** argv, const char* usage,
                              const std::string& repeated_flag) {
  ConfigureProcessAllocator();
  ConfigureFloatingPoint();
  RegisterModules();
  absl::SetProgramUsageMessage(usage);
  NormalizedArgs args(argc, argv);
  ProgramArguments parsed;
  if (!repeated_flag.empty()) parsed.repeated = args.TakeRepeated(repeated_flag);
  for (const char* arg : absl::ParseCommandLine(args.argc(), args.argv())) {
    parsed.positional.emplace_back(arg);
  }
  return parsed;
}

}  // namespace strata
