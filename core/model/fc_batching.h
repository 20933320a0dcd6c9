// FcBatching: how a stanza FC worker batches the activations of the conv
// workers it serves, per iteration:
//   "gathered"  every conv worker's rows in one batch: one forward and one
//               backward of the head over them all, every conv worker
//               answered once all are done (fewer, larger GEMMs);
//   "arrival"   each conv worker's rows on their own, as they arrive: the
//               head's forward and backward over them and that conv worker
//               answered at once, so its backward overlaps the FC worker's
//               wait for a slower conv worker; the head's gradients are
//               summed over the slices before its one update.
// Both compute the same gradients up to the order of float sums, except
// where a head layer's output depends on the batch it is given (an MoE
// layer's expert capacity).
#ifndef STRATA_CORE_MODEL_FC_BATCHING_H_
#define STRATA_CORE_MODEL_FC_BATCHING_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace strata {

enum class FcBatching { kGathered, kArrival };

// "gathered" or "arrival"; InvalidArgument naming both for another text.
absl::StatusOr<FcBatching> ParseFcBatching(absl::string_view text);
std::string FcBatchingName(FcBatching batching);

// The fc.batching knob: how a stanza FC worker batches its conv workers'
// activations, "gathered" or "arrival"; declared by every FC worker whose
// head can take it (not one whose MoE experts are split over several FC
// workers: their exchanges pair one batch per FC worker).
inline constexpr char kFcBatchingKnob[] = "fc.batching";
// Registers fc.batching with KnobCatalog::Global(); a second call does nothing.
void RegisterFcBatchingKnob();

}  // namespace strata

#endif  // STRATA_CORE_MODEL_FC_BATCHING_H_
