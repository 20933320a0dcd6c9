// ExpertFfn: the feed-forward networks of a group of experts (Linear ->
// ReLU -> Linear each), run over slot buffers {experts, capacity, D} in
// which expert e's tokens fill rows 0..used[e]-1. Only those rows are
// computed: padded slots hold no token. Each expert is one GEMM per linear
// over its used rows (oneDNN sgemm, threaded).
//
// Parameters (names given by the owner): w1 {E, D, H}, b1 {E, H},
// w2 {E, H, D}, b2 {E, D}. An MoE layer holds all E experts; with expert
// parallelism a process holds its own share.
#ifndef STRATA_MOE_EXPERT_FFN_H_
#define STRATA_MOE_EXPERT_FFN_H_

#include <string>
#include <vector>

#include "core/layers/layer.h"

namespace strata::moe {

class ExpertFfn {
 public:
  ExpertFfn(const std::string& name_prefix, int experts, int64_t dim, int64_t hidden);

  int experts() const { return experts_; }
  int64_t dim() const { return dim_; }
  int64_t hidden() const { return hidden_; }
  std::vector<Parameter*> parameters() { return {&w1_, &b1_, &w2_, &b2_}; }
  void InitParameters(Rng& rng);

  // out[e, r] = FFN_e(slots[e, r]) for r < used[e]. Keeps what Backward needs.
  void Forward(const Tensor& slots, const std::vector<int64_t>& used, const Tensor& out);
  // From the gradient of the used output rows: every parameter's grad
  // (overwritten; zero for an expert without tokens) and grad_slots on the
  // used rows. Must follow Forward.
  void Backward(const Tensor& grad_out, const Tensor& grad_slots);

 private:
  int experts_;
  int64_t dim_, hidden_;
  Parameter w1_, b1_, w2_, b2_;
  // From Forward.
  Tensor slots_, hidden_act_;  // {E, C, D}, {E, C, H} after ReLU
  std::vector<int64_t> used_;
};

}  // namespace strata::moe

#endif  // STRATA_MOE_EXPERT_FFN_H_
