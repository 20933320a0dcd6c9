// ExpertFfn: the feed-forward networks of a group of experts (Linear ->
// ReLU -> Linear each), run over slot buffers {experts, capacity, D} in
// which expert e's tokens fill rows 0..used[e]-1. Only those rows are
// computed: padded slots hold no token. Each expert is one GEMM per linear
// over its used rows, through the backend the FFN was made on (oneDNN
// sgemm on the host, cuBLAS on a GPU); every tensor lives on its device.
//
// Parameters (names given by the owner): w1 {E, D, H}, b1 {E, H},
// w2 {E, H, D}, b2 {E, D}. An MoE layer holds all E experts; with expert
// parallelism a process holds its own share: whole experts, or a slice of
// one expert's hidden units (H is then the slice's width, and only the
// first slice adds the output bias: the slices' outputs are summed).
#ifndef STRATA_MOE_EXPERT_FFN_H_
#define STRATA_MOE_EXPERT_FFN_H_

#include <string>
#include <vector>

#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata::moe {

// What Forward keeps for Backward: one per call in flight (a pipelined
// caller runs several chunks before their backward passes).
struct ExpertActivations {
  Tensor slots;               // {E, C, D}: the input rows
  Tensor hidden;              // {E, C, H}: after ReLU
  std::vector<int64_t> used;  // {E}
};

class ExpertFfn {
 public:
  // Without `output_bias` there is no b2 (a hidden slice other than the first).
  ExpertFfn(const std::string& name_prefix, int experts, int64_t dim, int64_t hidden,
            bool output_bias = true, const Backend& backend = HostBackend());

  int experts() const { return experts_; }
  int64_t dim() const { return dim_; }
  int64_t hidden() const { return hidden_; }
  bool output_bias() const { return output_bias_; }
  // w1, b1, w2, then b2 when there is an output bias.
  std::vector<Parameter*> parameters();
  void InitParameters(Rng& rng);

  // out[e, r] = FFN_e(slots[e, r]) for r < used[e] ({E, C, D} buffers, any
  // C; used[e] <= C). Fills `saved` for Backward.
  void Forward(const Tensor& slots, const std::vector<int64_t>& used, const Tensor& out,
               ExpertActivations* saved) const;
  // From the gradient of the used output rows of the Forward that filled
  // `saved`: every parameter's grad — overwritten, or added to when
  // `accumulate` (the chunks of one step) — and grad_slots on the used rows.
  void Backward(const Tensor& grad_out, const ExpertActivations& saved, const Tensor& grad_slots,
                bool accumulate);

 private:
  const Backend& backend_;
  int experts_;
  int64_t dim_, hidden_;
  bool output_bias_;
  Parameter w1_, b1_, w2_, b2_;
};

}  // namespace strata::moe

#endif  // STRATA_MOE_EXPERT_FFN_H_
