// MoeLayer: a Mixture-of-Experts layer (Tutel-style) usable in a model's
// head: a linear gate picks the top-k of E experts for every token, the
// tokens are dispatched by index into the experts' slots (capacity rules in
// routing.h), each expert is an FFN (Linear -> ReLU -> Linear) run as one
// GEMM per linear over its slots, and the outputs are combined back
// weighted by the gate. Everything runs through the backend the layer is
// built on (core/ops/backend.h's routing ops): on a GPU the gate, the
// routing and the experts stay on the device, and the host waits only when
// the capacity depends on the experts' need (capacity factor <= 0). With a
// padded capacity (f > 0) on a device, the experts compute every slot, the
// unused ones zeroed; on the host they compute their used slots alone.
//
// Parameters: <name>.gate {E, D} (fp32), <name>.w1 {E, D, H}, <name>.b1
// {E, H}, <name>.w2 {E, H, D}, <name>.b2 {E, D}. Input and output {D} per
// token (a batch of N samples is N tokens).
//
// In an expert group (JoinExpertGroup, host layers only) this process keeps
// the gate and its share of the experts (expert_parallel.h); Forward and
// Backward are then
// collective over the group. A failed exchange (a peer died, timed out)
// cannot be reported through Layer's interface: the layer then returns
// zeros, keeps the error in status(), and does no more work — the caller
// checks status() after every call.
//
// The GShard load-balancing loss  aux = E * sum_e mean_t(p[t,e]) *
// frac_t(top1(t) = e)  is reported by aux_loss() and its gradient, times
// `aux_loss_weight` and the loss weight (SetLossWeight), is added to the
// gate's in Backward (so the model's loss is cross-entropy + weight * aux
// without the trainer knowing).
#ifndef STRATA_MOE_MOE_LAYER_H_
#define STRATA_MOE_MOE_LAYER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"
#include "moe/expert_exchange.h"
#include "moe/expert_ffn.h"
#include "moe/expert_parallel.h"
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
  ParallelSettings parallel;  // in an expert group, until set_parallel_settings
};

class MoeLayer final : public Layer {
 public:
  // Fails on a non-vector input, experts < 1, top_k outside [1, experts] or
  // hidden < 1, naming the field.
  static absl::StatusOr<std::unique_ptr<MoeLayer>> Create(std::string name,
                                                          const Shape& input_shape,
                                                          const MoeOptions& options,
                                                          const Backend& backend = HostBackend());

  const char* kind() const override { return "moe"; }
  Shape output_shape() const override { return input_shape(); }
  // InvalidArgument unless `input` is {tokens, D}: for tokens that come
  // from elsewhere (another process) before they reach Forward.
  absl::Status ValidateInput(const Tensor& input) const;
  // Requires a valid input (CHECK): Model validates shapes when it is built.
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override;  // gate, then w1, b1, w2, b2
  // Only the gate: the experts are split over an expert group.
  std::vector<Parameter*> replicated_parameters() override { return {&gate_}; }
  // The experts' parameters (w1, b1, w2, b2): in a group, the owned share.
  std::vector<Parameter*> expert_parameters();
  void InitParameters(Rng& rng) override;
  void SetLossWeight(float weight) override { loss_weight_ = weight; }
  int64_t ForwardFlopsPerSample() const override;

  // k for the following calls (the runtime may change it per iteration; in
  // an expert group, to the same k on every process).
  absl::Status set_top_k(int k);
  int top_k() const { return options_.top_k; }
  const MoeOptions& options() const { return options_; }
  // From the last Forward, on the host (copied from a device, which waits
  // for it): the routing and the load-balancing loss. FailedPrecondition
  // before any Forward.
  absl::StatusOr<Routing> routing() const;
  absl::StatusOr<float> aux_loss() const;
  // OK unless an expert-group exchange failed (see above).
  const absl::Status& status() const { return status_; }

  // Keeps only this process's share of the experts (as initialised so far;
  // whole experts, or a hidden slice of one when there are fewer experts
  // than processes — expert_parallel.h) and makes Forward/Backward
  // collective over `exchange`'s group; `layer` numbers this layer among the
  // model's MoE layers. InvalidArgument, naming the layer, when the experts
  // cannot be laid out over the group; FailedPrecondition for a layer on
  // a device other than the host. Must precede any optimizer built over
  // parameters(), which changes.
  absl::Status JoinExpertGroup(ExpertExchange* exchange, int layer);
  bool in_expert_group() const { return parallel_ != nullptr; }
  // The group's pipelining degree and parallelism for the following calls
  // (the same on every process of the group).
  absl::Status set_parallel_settings(const ParallelSettings& settings);
  // Collective: gathers every expert's current weights, so that following
  // inference Forwards (training = false) run here alone, without the
  // group — until the next training Forward.
  absl::Status GatherExperts();
  // Collective: gathers every expert and leaves the group; the layer then
  // holds all experts again (parameters() changes), e.g. to write the whole
  // model.
  absl::Status LeaveExpertGroup();

 private:
  MoeLayer(std::string name, const Shape& input_shape, const MoeOptions& options,
           const Backend& backend);

  // Runs the experts over the slots; false (status_ set) on a failed exchange.
  bool RunExperts(const Tensor& slots, const Tensor& out, bool training);
  // The capacity for the ranked choices of `tokens` tokens (agreed over the
  // group) and the rows each expert computes.
  absl::Status Route(int64_t tokens);

  const Backend& backend_;
  MoeOptions options_;
  int64_t dim_;
  Parameter gate_;
  std::unique_ptr<ExpertFfn> experts_;        // all experts (outside a group)
  std::unique_ptr<ExpertParallel> parallel_;  // this process's share (in a group)
  ExpertFfn* inference_replica_ = nullptr;    // from GatherExperts
  ExpertActivations experts_saved_;
  absl::Status status_;
  Rng noise_;
  // The last Forward's routing, on the backend's device.
  Tensor probs_;         // {T, E}
  Tensor expert_;        // int32 {T, k}
  Tensor rank_;          // int32 {T, k}: rank in the expert's queue
  Tensor gate_weights_;  // {T, k}
  Tensor need_;          // int32 {E}: choices each expert received
  Tensor load_;          // {2, E}: GateLoad's mean probabilities and top-1 fractions
  int64_t capacity_ = 0;
  std::vector<int64_t> used_;  // {E}: the slot rows each expert computes
  bool padded_ = false;        // used_ is every row; the unused ones hold zeros
  // Kept from the training Forward for Backward.
  Tensor input_;
  Tensor expert_out_;         // {E, C, D}
  float loss_weight_ = 1.0f;  // SetLossWeight's
};

}  // namespace strata::moe

#endif  // STRATA_MOE_MOE_LAYER_H_
