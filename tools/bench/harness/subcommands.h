// A tool of subcommands (strata_bench, strata_research): its `main` is a
// table of them, each a name, its usage for --help, and what it runs.
//
//   const Subcommand kSubcommands[] = {{"train", "--config JOB.json ...", Train}, ...};
//   const std::string usage = UsageOf("strata_bench", "Strata's benchmark tool.", kSubcommands);
//   ... StartProgram(argc, argv, usage.c_str()) ...
//   return RunSubcommand("strata_bench", kSubcommands, args.positional);
#ifndef STRATA_TOOLS_BENCH_HARNESS_SUBCOMMANDS_H_
#define STRATA_TOOLS_BENCH_HARNESS_SUBCOMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace strata::bench {

struct Subcommand {
  const char* name;
  const char* usage;  // its flags; lines after the first are indented under it
  absl::Status (*run)();
};

// `description`, then a line per subcommand: "  TOOL NAME USAGE".
std::string UsageOf(const std::string& tool, const std::string& description,
                    absl::Span<const Subcommand> subcommands);

// Runs the subcommand `positional[1]` names and returns the exit code
// (ExitCodeFor: its error printed); 2, naming the known ones, when none
// or an unknown one is named.
int RunSubcommand(const std::string& tool, absl::Span<const Subcommand> subcommands,
                  const std::vector<std::string>& positional);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_HARNESS_SUBCOMMANDS_H_
