#include "core/util/fc_batching.h"

#include "absl/strings/str_cat.h"

namespace strata {

absl::StatusOr<FcBatching> ParseFcBatching(absl::string_view text) {
  if (text == "gathered") return FcBatching::kGathered;
  if (text == "arrival") return FcBatching::kArrival;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown FC batching \"", text, "\" (use gathered or arrival)"));
}

std::string FcBatchingName(FcBatching batching) {
  return batching == FcBatching::kArrival ? "arrival" : "gathered";
}

}  // namespace strata
