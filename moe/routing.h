// Routing for a Mixture-of-Experts layer (Tutel/GShard style): which expert
// slot each token's top-k choices go to, as indices — never a dense
// (tokens, experts, capacity) mask.
//
//   GateOutput gate = TopKGate(logits, tokens, experts, k, normalize);
//   Routing r = AssignSlots(gate, experts, capacity_rule, /*prioritize_confident=*/false);
//   // token t's i-th choice: expert r.expert[t*k+i], slot r.slot[t*k+i] (-1: dropped),
//   // weight r.gate[t*k+i]
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

// The gate's decision for a batch of tokens.
struct GateOutput {
  int64_t tokens = 0;
  int k = 0;
  std::vector<float> probs;     // {T, E}: softmax of the gate logits
  std::vector<int32_t> expert;  // {T, k}: chosen experts, most probable first
  std::vector<float> gate;      // {T, k}: their weights (normalised over k when asked)
};

// Softmax over each row of `logits` ({T, E}), then the k most probable
// experts per token (ties: the lower index). With `normalize`, the k
// weights of a token are divided by their sum. Requires 1 <= k <= E.
GateOutput TopKGate(const float* logits, int64_t tokens, int experts, int k, bool normalize);

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

// Gives every choice a slot of its expert: all first choices before any
// second choice (GShard's priority), tokens in order — or, with
// `prioritize_confident`, in decreasing order of their first choice's
// probability (batch-prioritised routing). Every expert has `capacity`
// slots.
Routing AssignSlots(const GateOutput& gate, int experts, int64_t capacity,
                    bool prioritize_confident);
// The same with the capacity `rule` gives for these tokens alone (an expert
// group agrees on CapacityFor's arguments instead).
Routing AssignSlots(const GateOutput& gate, int experts, const CapacityRule& rule,
                    bool prioritize_confident);

// The largest number of choices any expert receives from `gate` (before
// capacity): what f <= 0 sizes the slots by.
int64_t LargestNeed(const GateOutput& gate, int experts);

}  // namespace strata::moe

#endif  // STRATA_MOE_ROUTING_H_
