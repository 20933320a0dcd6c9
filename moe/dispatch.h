// Sparse dispatch kernels: move tokens into their experts' slots and the
// experts' outputs back, by index (Routing), in O(T * k * D) — never a dense
// (T, E, C) mask. Slot buffers are {E, C, D}; expert e's routed tokens fill
// its rows 0..used[e]-1 and no other row is written or read, so padding
// costs nothing. Vectorised over D, threaded over tokens (OpenMP).
#ifndef STRATA_MOE_DISPATCH_H_
#define STRATA_MOE_DISPATCH_H_

#include <cstdint>

#include "moe/routing.h"

namespace strata::moe {

// slots[e, s] = x[t] for every kept choice (t, i) routed to (e, s).
void Encode(const Routing& r, const float* x, int64_t dim, float* slots);

// y[t] = sum over t's kept choices of gate * expert_out[e, s]; a token whose
// every choice was dropped gets zeros.
void Decode(const Routing& r, const float* expert_out, int64_t dim, float* y);

// Backward of Decode: grad_expert_out[e, s] = gate * grad_y[t] on the used
// rows, and grad_gate[t, i] = <grad_y[t], expert_out[e, s]> (0 if dropped).
void DecodeBackward(const Routing& r, const float* grad_y, const float* expert_out, int64_t dim,
                    float* grad_expert_out, float* grad_gate);

// Backward of Encode: grad_x[t] = sum over t's kept choices of grad_slots[e, s].
void EncodeBackward(const Routing& r, const float* grad_slots, int64_t dim, float* grad_x);

}  // namespace strata::moe

#endif  // STRATA_MOE_DISPATCH_H_
