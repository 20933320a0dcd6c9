// Routing for a Mixture-of-Experts layer (Tutel/GShard style): how many
// slots each expert has, and which slot each token's top-k choices went to,
// as indices — never a dense (tokens, experts, capacity) mask. The routing
// itself is computed by the backend's routing ops (core/ops/backend.h);
// Routing is its host copy, for inspection and reports.
//
//   absl::StatusOr<Routing> r = layer.routing();
//   // token t's i-th choice: expert r->expert[t*k+i], slot r->slot[t*k+i] (-1: dropped),
//   // weight r->gate[t*k+i]
#ifndef STRATA_MOE_ROUTING_H_
#define STRATA_MOE_ROUTING_H_

#include <cstdint>
#include <vector>

namespace strata::moe {

// How many slots each expert has (Tutel's capacity factor f):
//  * f > 0: C = k * f * ceil(T / E), rounded up to `alignment`; every
//    expert is padded to C.
//  * f < 0: C = the largest number of choices any expert received, capped at
//    k * |f| * ceil(T / E): no padding beyond what is needed.
//  * f = 0: dropless, C = the largest need (agreed across the expert group
//    when the experts are spread over processes).
// Choices past an expert's capacity are dropped: they contribute nothing to
// the output and are counted.
struct CapacityRule {
  double factor = 1.0;
  int64_t alignment = 1;
};

int64_t CapacityFor(const CapacityRule& rule, int64_t tokens, int experts, int k,
                    int64_t largest_need);

// One forward pass's routing.
struct Routing {
  int64_t tokens = 0;
  int experts = 0;
  int k = 0;
  int64_t capacity = 0;
  std::vector<int32_t> expert;  // {T, k}
  std::vector<int32_t> slot;    // {T, k}: row within the expert's slots, -1 = dropped
  std::vector<float> gate;      // {T, k}
  std::vector<int64_t> used;    // {E}: slots holding a token (rows 0..used-1)
  int64_t dropped = 0;          // choices past capacity
};

}  // namespace strata::moe

#endif  // STRATA_MOE_ROUTING_H_
