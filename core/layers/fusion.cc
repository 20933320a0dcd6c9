#include "core/layers/fusion.h"

#include "core/layers/activation.h"

namespace strata {

int FuseRelus(LayerChain& chain, size_t begin, size_t end) {
  int fused = 0;
  for (size_t i = begin; i + 1 < end && i + 1 < chain.size(); ++i) {
    auto* relu = dynamic_cast<Relu*>(chain[i + 1].get());
    if (relu == nullptr || relu->absorbed()) continue;
    if (chain[i]->AbsorbFollowingRelu()) {
      relu->MarkAbsorbed();
      ++fused;
    }
  }
  return fused;
}

}  // namespace strata
