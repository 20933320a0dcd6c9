#include "tools/bench/harness/subcommands.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "core/process/process_setup.h"

namespace strata::bench {

std::string UsageOf(const std::string& tool, const std::string& description,
                    absl::Span<const Subcommand> subcommands) {
  std::string usage = description;
  for (const Subcommand& s : subcommands) {
    const std::string head = absl::StrCat("  ", tool, " ", s.name, " ");
    const std::string indent(head.size(), ' ');
    absl::StrAppend(&usage, "\n", head, absl::StrReplaceAll(s.usage, {{"\n", "\n" + indent}}));
  }
  return usage;
}

int RunSubcommand(const std::string& tool, absl::Span<const Subcommand> subcommands,
                  const std::vector<std::string>& positional) {
  std::vector<std::string> names;
  for (const Subcommand& s : subcommands) {
    if (positional.size() > 1 && positional[1] == s.name) return ExitCodeFor(tool, s.run());
    names.push_back(s.name);
  }
  if (positional.size() < 2) {
    std::fprintf(stderr, "%s: error: name one of: %s\n", tool.c_str(),
                 absl::StrJoin(names, ", ").c_str());
  } else {
    std::fprintf(stderr, "%s: error: unknown subcommand \"%s\" (known: %s)\n", tool.c_str(),
                 positional[1].c_str(), absl::StrJoin(names, ", ").c_str());
  }
  return 2;
}

}  // namespace strata::bench
