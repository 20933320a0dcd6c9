#include "core/ops/cuda/routing_kernels.h"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "core/ops/cuda/cuda_status.h"
#include "core/ops/shared/gate_row.h"

namespace strata {
namespace {

constexpr int kThreads = 128;
// Threads of the blocks that scan or reduce over every token for one expert.
constexpr int kScanThreads = 256;

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

absl::Status Launched(const char* op) { return CudaStatus(cudaGetLastError(), op); }

// One thread per token.
__global__ void TopKGateKernel(const float* logits, int64_t tokens, int experts, int k,
                               bool normalize, float* probs, int32_t* expert, float* gate) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= tokens) return;
  TopKGateRow(logits + t * experts, experts, k, normalize, probs + t * experts, expert + t * k,
              gate + t * k);
}

__global__ void TopKGateBackwardKernel(const float* probs, const int32_t* expert, const float* gate,
                                       const float* grad_gate, const float* prob_grad,
                                       int64_t tokens, int experts, int k, bool normalize,
                                       float* grad_logits) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= tokens) return;
  TopKGateBackwardRow(probs + t * experts, expert + t * k, gate + t * k, grad_gate + t * k,
                      prob_grad, experts, k, normalize, grad_logits + t * experts);
}

// order[p] = the token at place p in decreasing order of its first
// choice's probability (ties: the lower token): one thread per token counts
// the tokens ahead of it, O(T^2) comparisons, few for a batch's tokens.
__global__ void ConfidenceOrderKernel(const float* probs, const int32_t* expert, int64_t tokens,
                                      int experts, int k, int32_t* order) {
  const int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (t >= tokens) return;
  const float mine = probs[t * experts + expert[t * k]];
  int64_t ahead = 0;
  for (int64_t u = 0; u < tokens; ++u) {
    const float theirs = probs[u * experts + expert[u * k]];
    ahead += theirs > mine || (theirs == mine && u < t);
  }
  order[ahead] = static_cast<int32_t>(t);
}

// One block per expert scans every choice in priority order (every first
// choice, then every second, ...; tokens by `order` when given) and ranks
// the choices that went to its expert.
__global__ void RankKernel(const int32_t* expert, const int32_t* order, int64_t tokens, int k,
                           int32_t* rank, int32_t* need) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage scratch;
  const int e = blockIdx.x;
  const int64_t choices = tokens * k;
  int running = 0;
  for (int64_t base = 0; base < choices; base += kScanThreads) {
    const int64_t q = base + threadIdx.x;
    int64_t c = -1;
    if (q < choices) {
      const int64_t place = q % tokens;
      const int64_t t = order != nullptr ? order[place] : place;
      c = t * k + q / tokens;
    }
    const int mine = c >= 0 && expert[c] == e ? 1 : 0;
    int before = 0, total = 0;
    Scan(scratch).ExclusiveSum(mine, before, total);
    if (mine) rank[c] = running + before;
    running += total;
    __syncthreads();  // scratch is reused by the next chunk
  }
  if (threadIdx.x == 0) need[e] = running;
}

// One block per expert: its mean probability and the fraction of tokens
// whose first choice it is.
__global__ void GateLoadKernel(const float* probs, const int32_t* expert, int64_t tokens,
                               int experts, int k, float* load) {
  using Reduce = cub::BlockReduce<double, kScanThreads>;
  __shared__ typename Reduce::TempStorage scratch;
  const int e = blockIdx.x;
  double prob = 0.0, first = 0.0;
  for (int64_t t = threadIdx.x; t < tokens; t += kScanThreads) {
    prob += probs[t * experts + e];
    first += expert[t * k] == e ? 1.0 : 0.0;
  }
  const double prob_sum = Reduce(scratch).Sum(prob);
  __syncthreads();
  const double first_sum = Reduce(scratch).Sum(first);
  if (threadIdx.x == 0) {
    const double n = tokens > 0 ? static_cast<double>(tokens) : 1.0;
    load[e] = static_cast<float>(prob_sum / n);
    load[experts + e] = static_cast<float>(first_sum / n);
  }
}

// One block per choice: the token into its slot.
__global__ void DispatchKernel(RoutedChoices r, const float* x, int64_t dim, float* slots) {
  const int64_t c = blockIdx.x;
  if (!r.kept(c)) return;
  const float* src = x + (c / r.k) * dim;
  float* dst = slots + r.slot_row(c) * dim;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) dst[d] = src[d];
}

// One block per token: the sum of its kept choices' rows.
__global__ void CombineKernel(RoutedChoices r, const float* gate, const float* rows, int64_t dim,
                              float* y) {
  const int64_t t = blockIdx.x;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float acc = 0.0f;
    for (int i = 0; i < r.k; ++i) {
      const int64_t c = t * r.k + i;
      if (!r.kept(c)) continue;
      acc += (gate != nullptr ? gate[c] : 1.0f) * rows[r.slot_row(c) * dim + d];
    }
    y[t * dim + d] = acc;
  }
}

// One block per choice: its row's gradient and the gate's (a block-wide
// dot product).
__global__ void CombineBackwardKernel(RoutedChoices r, const float* gate, const float* grad_y,
                                      const float* rows, int64_t dim, float* grad_rows,
                                      float* grad_gate) {
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage scratch;
  const int64_t c = blockIdx.x;
  if (!r.kept(c)) {
    if (threadIdx.x == 0) grad_gate[c] = 0.0f;
    return;
  }
  const float* dy = grad_y + (c / r.k) * dim;
  const int64_t row = r.slot_row(c) * dim;
  float dot = 0.0f;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    grad_rows[row + d] = gate[c] * dy[d];
    dot += dy[d] * rows[row + d];
  }
  const float total = Reduce(scratch).Sum(dot);
  if (threadIdx.x == 0) grad_gate[c] = total;
}

}  // namespace

absl::Status LaunchTopKGate(cudaStream_t stream, const float* logits, int64_t tokens, int experts,
                            int k, bool normalize, float* probs, int32_t* expert, float* gate) {
  if (tokens == 0) return absl::OkStatus();
  TopKGateKernel<<<Blocks(tokens), kThreads, 0, stream>>>(logits, tokens, experts, k, normalize,
                                                          probs, expert, gate);
  return Launched("topk_gate");
}

absl::Status LaunchTopKGateBackward(cudaStream_t stream, const float* probs, const int32_t* expert,
                                    const float* gate, const float* grad_gate,
                                    const float* prob_grad, int64_t tokens, int experts, int k,
                                    bool normalize, float* grad_logits) {
  if (tokens == 0) return absl::OkStatus();
  TopKGateBackwardKernel<<<Blocks(tokens), kThreads, 0, stream>>>(
      probs, expert, gate, grad_gate, prob_grad, tokens, experts, k, normalize, grad_logits);
  return Launched("topk_gate_backward");
}

absl::Status LaunchRankChoices(cudaStream_t stream, const float* probs, const int32_t* expert,
                               int64_t tokens, int experts, int k, bool prioritize_confident,
                               int32_t* order, int32_t* rank, int32_t* need) {
  if (prioritize_confident && tokens > 0) {
    ConfidenceOrderKernel<<<Blocks(tokens), kThreads, 0, stream>>>(probs, expert, tokens, experts,
                                                                   k, order);
    if (absl::Status s = Launched("rank_choices"); !s.ok()) return s;
  }
  RankKernel<<<static_cast<unsigned>(experts), kScanThreads, 0, stream>>>(
      expert, prioritize_confident ? order : nullptr, tokens, k, rank, need);
  return Launched("rank_choices");
}

absl::Status LaunchGateLoad(cudaStream_t stream, const float* probs, const int32_t* expert,
                            int64_t tokens, int experts, int k, float* load) {
  GateLoadKernel<<<static_cast<unsigned>(experts), kScanThreads, 0, stream>>>(probs, expert, tokens,
                                                                              experts, k, load);
  return Launched("gate_load");
}

absl::Status LaunchDispatchTokens(cudaStream_t stream, const RoutedChoices& r, const float* x,
                                  int64_t dim, float* slots) {
  const int64_t choices = r.tokens * r.k;
  if (choices == 0 || dim == 0) return absl::OkStatus();
  DispatchKernel<<<static_cast<unsigned>(choices), kThreads, 0, stream>>>(r, x, dim, slots);
  return Launched("dispatch_tokens");
}

absl::Status LaunchCombineTokens(cudaStream_t stream, const RoutedChoices& r, const float* gate,
                                 const float* rows, int64_t dim, float* y) {
  if (r.tokens == 0 || dim == 0) return absl::OkStatus();
  CombineKernel<<<static_cast<unsigned>(r.tokens), kThreads, 0, stream>>>(r, gate, rows, dim, y);
  return Launched("combine_tokens");
}

absl::Status LaunchCombineTokensBackward(cudaStream_t stream, const RoutedChoices& r,
                                         const float* gate, const float* grad_y, const float* rows,
                                         int64_t dim, float* grad_rows, float* grad_gate) {
  const int64_t choices = r.tokens * r.k;
  if (choices == 0) return absl::OkStatus();
  CombineBackwardKernel<<<static_cast<unsigned>(choices), kThreads, 0, stream>>>(
      r, gate, grad_y, rows, dim, grad_rows, grad_gate);
  return Launched("combine_tokens_backward");
}

}  // namespace strata
