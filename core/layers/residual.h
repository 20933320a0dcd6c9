// Residual: a block of two branches over one input, summed. The body is a
// chain of layers; the shortcut is another chain (a 1x1 projection, say) or,
// when empty, the identity. y = body(x) + shortcut(x), and both branches'
// outputs must have one shape (Create checks).
//
// The block owns its layers. Its parameters and state buffers are the
// body's then the shortcut's, in order, under the layers' own names
// ("block1.conv1.weight"). Forward and Backward run the whole block: to the
// model it is one layer, so a model's after-layer hook sees it once, when
// every parameter gradient in it is final. Create fuses each branch's ReLUs
// into the layers before them (core/layers/fusion.h).
#ifndef STRATA_CORE_LAYERS_RESIDUAL_H_
#define STRATA_CORE_LAYERS_RESIDUAL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/ops/backend.h"

namespace strata {

class Residual final : public Layer {
 public:
  // `body` must not be empty; each chain's layers must chain from
  // `input_shape` (layer k's input is layer k-1's output). InvalidArgument
  // naming both shapes when the branches end in different shapes.
  static absl::StatusOr<std::unique_ptr<Residual>> Create(std::string name,
                                                          const Shape& input_shape, LayerChain body,
                                                          LayerChain shortcut,
                                                          const Backend& backend = HostBackend());

  const char* kind() const override { return "residual"; }
  Shape output_shape() const override { return body_.back()->output_shape(); }
  Tensor Forward(const Tensor& input, bool training) override;
  Tensor Backward(const Tensor& grad_output, bool need_input_grad) override;
  std::vector<Parameter*> parameters() override;
  std::vector<Parameter*> replicated_parameters() override;
  std::vector<StateBuffer*> state_buffers() override;
  // Each layer draws from its own stream taken from `rng`, body first.
  void InitParameters(Rng& rng) override;
  int64_t ForwardFlopsPerSample() const override;

  const LayerChain& body() const { return body_; }
  const LayerChain& shortcut() const { return shortcut_; }

 private:
  Residual(std::string name, const Shape& input_shape, LayerChain body, LayerChain shortcut,
           const Backend& backend)
      : Layer(std::move(name), input_shape),
        backend_(backend),
        body_(std::move(body)),
        shortcut_(std::move(shortcut)) {}
  template <typename F>
  void ForEachLayer(F&& f) const;

  const Backend& backend_;
  LayerChain body_;
  LayerChain shortcut_;  // empty: the identity
};

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_RESIDUAL_H_
