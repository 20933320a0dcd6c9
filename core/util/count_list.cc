#include "core/util/count_list.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace strata {

std::vector<std::string> SplitList(absl::string_view text) {
  return absl::StrSplit(text, ',', absl::SkipEmpty());
}

absl::StatusOr<std::vector<int64_t>> ParseCountList(absl::string_view flag,
                                                    absl::string_view text) {
  std::vector<int64_t> counts;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(item, &n) || n < 1) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": \"", item, "\" is not a count >= 1"));
    }
    counts.push_back(n);
  }
  return counts;
}

}  // namespace strata
