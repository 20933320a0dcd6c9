#include "core/util/process_name.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace strata {
namespace {

// The name prefix of each role.
constexpr std::pair<const char*, const char*> kPrefixes[] = {
    {"server", "server"}, {"conv", "conv_worker"}, {"fc", "fc_worker"}};

}  // namespace

std::optional<NamedProcess> ParseProcessName(absl::string_view text) {
  for (const auto& [prefix, role] : kPrefixes) {
    if (!absl::StartsWith(text, prefix)) continue;
    int rank = -1;
    if (absl::SimpleAtoi(text.substr(absl::string_view(prefix).size()), &rank) && rank >= 0) {
      return NamedProcess{role, rank};
    }
  }
  return std::nullopt;
}

std::string ProcessName(absl::string_view role, int rank) {
  if (rank < 0) return "";
  for (const auto& [prefix, named_role] : kPrefixes) {
    if (role == named_role) return absl::StrCat(prefix, rank);
  }
  return "";
}

}  // namespace strata
