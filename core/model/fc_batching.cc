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
  static const bool registered = [] {
    KnobSpec fc_batching;
    fc_batching.name = kFcBatchingKnob;
    fc_batching.description =
        "how a stanza FC worker batches its conv workers' activations: gathered (all in one "
        "batch) or arrival (each conv worker's on its own, answered as soon as it is done)";
    // The head's gradients are summed in another order, and a layer whose
    // output depends on its batch (an MoE layer's capacity) sees smaller ones.
    fc_batching.alters_math = true;
    fc_batching.validate = [](const std::string& value) { return ParseFcBatching(value).status(); };
    return KnobCatalog::Global().Register(std::move(fc_batching)).ok();
  }();
  (void)registered;
}

}  // namespace strata
