// The Mixture-of-Experts routing ops of the CUDA backend (what each
// computes: core/ops/backend.h; the same per-token arithmetic as the host's
// through core/ops/shared/gate_row.h), queued on `stream` without waiting.
// Operands are device pointers whose shapes the caller has checked; each
// returns the launch's own error, naming the op.
#ifndef STRATA_CORE_OPS_CUDA_ROUTING_KERNELS_H_
#define STRATA_CORE_OPS_CUDA_ROUTING_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "core/ops/shared/routed_choices.h"

namespace strata {

absl::Status LaunchTopKGate(cudaStream_t stream, const float* logits, int64_t tokens, int experts,
                            int k, bool normalize, float* probs, int32_t* expert, float* gate);
absl::Status LaunchTopKGateBackward(cudaStream_t stream, const float* probs, const int32_t* expert,
                                    const float* gate, const float* grad_gate,
                                    const float* prob_grad, int64_t tokens, int experts, int k,
                                    bool normalize, float* grad_logits);
// `order` is scratch for `tokens` int32 (used with prioritize_confident).
absl::Status LaunchRankChoices(cudaStream_t stream, const float* probs, const int32_t* expert,
                               int64_t tokens, int experts, int k, bool prioritize_confident,
                               int32_t* order, int32_t* rank, int32_t* need);
absl::Status LaunchGateLoad(cudaStream_t stream, const float* probs, const int32_t* expert,
                            int64_t tokens, int experts, int k, float* load);
absl::Status LaunchDispatchTokens(cudaStream_t stream, const RoutedChoices& r, const float* x,
                                  int64_t dim, float* slots);
// gate may be null (weight 1).
absl::Status LaunchCombineTokens(cudaStream_t stream, const RoutedChoices& r, const float* gate,
                                 const float* rows, int64_t dim, float* y);
absl::Status LaunchCombineTokensBackward(cudaStream_t stream, const RoutedChoices& r,
                                         const float* gate, const float* grad_y, const float* rows,
                                         int64_t dim, float* grad_rows, float* grad_gate);

}  // namespace strata

#endif  // STRATA_CORE_OPS_CUDA_ROUTING_KERNELS_H_
