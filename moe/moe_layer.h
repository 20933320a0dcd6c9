// MoeLayer: a Mixture-of-Experts layer (Tutel-style) usable in a model's
// head: a linear gate picks the top-k of E experts for every token, the
// tokens are dispatched by index into the experts' slots (capacity rules in
// routing.h), each expert is an FFN (Linear -> ReLU -> Linear) run as one
// GEMM over its used slots only, and the outputs are combined back weighted
// by the gate.
//
// Parameters: <name>.gate {E, D} (fp32), <name>.w1 {E, D, H}, <name>.b1
// {E, H}, <name>.w2 {E, H, D}, <name>.b2 {E, D}. Input and output {D} per
// token (a batch of N samples is N tokens).
//
// The GShard load-balancing loss  aux = E * sum_e mean_t(p[t,e]) *
// frac_t(top1(t) = e)  is reported by aux_loss() and its gradient, times
// `aux_loss_weight`, is added to the gate's in Backward (so the model's loss
// is cross-entropy + weight * aux without the trainer knowing).
#ifndef STRATA_MOE_MOE_LAYER_H_
#define STRATA_MOE_MOE_LAYER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "moe/expert_ffn.h"
#include "moe/routing.h"

namespace strata::moe {

struct MoeOptions {
  int experts = 8;
  int top_k = 2;
  int64_t hidden = 1024;
  CapacityRule capacity;    // factor f (see routing.h) and slot alignment
  float gate_noise = 0.0f;  // std of normal noise added to the gate logits in training
  float aux_loss_weight = 0.01f;
  bool normalize_gate = true;      // divide the k weights of a token by their sum
  bool batch_prioritized = false;  // confident tokens claim slots first
  uint64_t noise_seed = 1;
};

class MoeLayer final : public Layer {
 public:
  // Fails on a non-vector input, experts < 1, top_k outside [1, experts] or
  // hidden < 1, naming the field.
  static absl::StatusOr<std::unique_ptr<MoeLayer>> Create(std::string name,
                                                          const Shape& input_shape,
                                                          const MoeOptions& options);

  const char* kind() const override { return "moe"; }
  Shape output_shape() const override { return input_shape(); }
  // InvalidArgument unless `input` is {tokens, D}: for tokens that come
  // from elsewhere (another process) before they reach Forward.
  absl::Status ValidateInput(const Tensor& input) const;
  // Requires a valid input (CHECK): Model validates shapes when it is built.
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override;  // gate, then w1, b1, w2, b2
  void InitParameters(Rng& rng) override;
  int64_t ForwardFlopsPerSample() const override;

  // k for the following calls (the runtime may change it per iteration).
  absl::Status set_top_k(int k);
  int top_k() const { return options_.top_k; }
  const MoeOptions& options() const { return options_; }
  // From the last Forward: the routing, the load-balancing loss, the number
  // of dropped choices.
  const Routing& routing() const { return routing_; }
  float aux_loss() const { return aux_loss_; }
  int64_t dropped() const { return routing_.dropped; }

 private:
  MoeLayer(std::string name, const Shape& input_shape, const MoeOptions& options);
  void GateBackward(const float* grad_gate, float* grad_logits) const;

  MoeOptions options_;
  int64_t dim_;
  Parameter gate_;
  ExpertFfn experts_;
  Rng noise_;
  // Kept from the training Forward for Backward.
  Tensor input_;
  GateOutput gate_out_;
  Routing routing_;
  Tensor expert_out_;                 // {E, C, D}
  std::vector<float> top1_fraction_;  // {E}
  float aux_loss_ = 0.0f;
};

}  // namespace strata::moe

#endif  // STRATA_MOE_MOE_LAYER_H_
