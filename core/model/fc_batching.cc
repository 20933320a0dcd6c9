#include "core/model/fc_batching.h"

#include "absl/strings/str_cat.h"
#include "core/control/knobs.h"

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

void RegisterFcBatchingKnob() {
  // A change alters the math: the head's gradients are summed in another
  // order, and a layer whose output depends on its batch (an MoE layer's
  // capacity) sees smaller ones.
  KnobCatalog::Global().RegisterIfNew(KnobSpec(
      kFcBatchingKnob,
      "how a stanza FC worker batches its conv workers' activations: gathered (all in one "
      "batch) or arrival (each conv worker's on its own, answered as soon as it is done)",
      /*alters_math=*/true,
      [](const std::string& value) { return ParseFcBatching(value).status(); }));
}

}  // namespace strata
