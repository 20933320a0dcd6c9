// Flags that take a comma-separated list: of names ("--modes ps,stanza")
// or of counts ("--workers 1,2,4").
#ifndef STRATA_CORE_UTIL_COUNT_LIST_H_
#define STRATA_CORE_UTIL_COUNT_LIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace strata {

// The items of `text`, in order; empty items are skipped.
std::vector<std::string> SplitList(absl::string_view text);

// The counts (each >= 1) in `text`, in order; empty items are skipped.
// InvalidArgument naming the flag and the item otherwise, e.g.
// `--workers: "x" is not a count >= 1`.
absl::StatusOr<std::vector<int64_t>> ParseCountList(absl::string_view flag, absl::string_view text);

}  // namespace strata

#endif  // STRATA_CORE_UTIL_COUNT_LIST_H_
