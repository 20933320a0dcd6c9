// What every Strata program does before anything of its own.
//
//   int main(int argc, char** argv) {
//     const strata::ProgramArguments args =
//         strata::StartProgram(argc, argv, "Strata conv worker.\n  strata_conv_worker ...", "job");
//     strata::SetLogProcess(...);  // once the flags say who this process is
//     return strata::ExitCodeFor("strata_conv_worker", Run(args.repeated));
//   }
//
// Tests register the modules in their main (tests/support/test_main.cc).
#ifndef STRATA_STARTUP_PROGRAM_STARTUP_H_
#define STRATA_STARTUP_PROGRAM_STARTUP_H_

#include <string>
#include <vector>

namespace strata {

// Registers the "moe" layer type and every module's knobs with the global
// registries (a module registers its own; core knows none of the modules
// above it). Idempotent; call before any thread reads them.
void RegisterModules();

struct ProgramArguments {
  // Every value of the repeated flag, in the order given.
  std::vector<std::string> repeated;
  // The arguments that are not flags, the program's name first.
  std::vector<std::string> positional;
};

// The process's allocator and floating-point settings
// (core/process/process_setup.h), RegisterModules, the usage line --help
// prints, then the command line parsed: flag names with dashes or
// underscores (flags/flag_names.h), `repeated_flag` (unless empty) taken
// out as often as it is given, the rest parsed by Abseil, which exits
// naming a flag it does not know or a value it cannot read.
ProgramArguments StartProgram(int argc, char** argv, const char* usage,
                              const std::string& repeated_flag = "");

}  // namespace strata

#endif  // STRATA_STARTUP_PROGRAM_STARTUP_H_
