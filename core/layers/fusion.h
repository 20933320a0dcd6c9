// Layer fusion: a ReLU folded into the layer before it.
//
// A BatchNorm2d followed by a ReLU costs two passes over the activations
// forward and two backward; oneDNN's batch normalisation can rectify its own
// output and mask the incoming gradient in the same pass. FuseRelus asks
// each layer followed by a ReLU to absorb it (Layer::AbsorbFollowingRelu);
// where the layer agrees, the ReLU becomes a pass-through (Relu::MarkAbsorbed).
// The chain keeps every layer, so layer indices, names and parameters do
// not change, and neither does what the chain computes.
//
//   FuseRelus(chain, 0, chain.size());
#ifndef STRATA_CORE_LAYERS_FUSION_H_
#define STRATA_CORE_LAYERS_FUSION_H_

#include <cstddef>

#include "core/layers/layer.h"

namespace strata {

// Fuses within layers [begin, end) of `chain` only: a pair split by `end`
// (a stanza split point, whose two sides run on different processes) stays
// unfused. Call before the first Forward. Returns the number of ReLUs fused.
int FuseRelus(LayerChain& chain, size_t begin, size_t end);

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_FUSION_H_
