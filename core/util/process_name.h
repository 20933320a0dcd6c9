// The short names by which specs on a command line pick one process of a
// job: "server0", "conv1", "fc0" (--cpu-schedule, --cpu-pin, the partitions
// of --inject-faults). The role strings are the launcher's: "server",
// "conv_worker", "fc_worker".
#ifndef STRATA_CORE_UTIL_PROCESS_NAME_H_
#define STRATA_CORE_UTIL_PROCESS_NAME_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace strata {

struct NamedProcess {
  std::string role;  // "server", "conv_worker" or "fc_worker"
  int rank = 0;
};

// "conv1" -> {"conv_worker", 1}; nullopt for anything else (a negative or
// missing rank included).
std::optional<NamedProcess> ParseProcessName(absl::string_view text);

// {"conv_worker", 1} -> "conv1"; "" for a role without such names or a
// rank below 0.
std::string ProcessName(absl::string_view role, int rank);

// What a spec says when a name is not one: "server<rank>, conv<rank> or
// fc<rank>".
inline constexpr const char* kProcessNameForms = "server<rank>, conv<rank> or fc<rank>";

}  // namespace strata

#endif  // STRATA_CORE_UTIL_PROCESS_NAME_H_
