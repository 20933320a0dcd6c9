// Layer: one differentiable stage of a model, forward and backward.
//
// Contract:
//  * A layer is built for a fixed per-sample input shape (no batch dimension;
//    images are {H, W, C}, vectors {F}) and reports its per-sample output
//    shape. Batch size may vary between calls; per-batch-size kernels are
//    created on first use and cached, never rebuilt per step.
//  * Forward(x, training) returns the output and keeps what Backward needs.
//  * Backward(dy, need_input_grad) must follow a training Forward. It
//    overwrites (not accumulates) every parameter's `grad` (unless told to
//    add to it: SetAccumulateGradients), and returns dL/dx,
//    or an undefined Tensor when `need_input_grad` is false (the first layer
//    of a model skips that work).
//  * Not thread-safe: one thread drives a layer at a time.
#ifndef STRATA_CORE_LAYERS_LAYER_H_
#define STRATA_CORE_LAYERS_LAYER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"
#include "core/util/rng.h"

namespace strata {

// A trainable tensor and its gradient. `name` is stable across runs and
// processes ("conv1.weight"); parameter-server keys derive from it.
struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;
};

// A non-trainable tensor that is part of the model state (BatchNorm running
// statistics); checkpointed with the parameters.
struct StateBuffer {
  std::string name;
  Tensor value;
};

class Backend;

// A parameter named `name` of `shape` on `backend`'s device, zero-filled,
// with a zero gradient.
Parameter ZeroParameter(std::string name, const Shape& shape, const Backend& backend);
// Fills `t` with values uniform in [-bound, bound) from `rng`, drawn on the
// host (the same values on every device) and copied to t's device.
void FillUniform(Tensor& t, Rng& rng, float bound);

class Layer {
 public:
  Layer(std::string name, Shape input_shape)
      : name_(std::move(name)), input_shape_(std::move(input_shape)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual const char* kind() const = 0;
  const Shape& input_shape() const { return input_shape_; }
  virtual Shape output_shape() const = 0;

  virtual Tensor Forward(const Tensor& input, bool training) = 0;
  virtual Tensor Backward(const Tensor& grad_output, bool need_input_grad) = 0;

  virtual std::vector<Parameter*> parameters() { return {}; }
  // The parameters that data-parallel replicas of this layer keep identical
  // (through the servers); the rest are split among the replicas (an MoE
  // layer's experts). Default: all of them.
  virtual std::vector<Parameter*> replicated_parameters() { return parameters(); }
  virtual std::vector<StateBuffer*> state_buffers() { return {}; }
  // Draws initial parameter values from `rng`.
  virtual void InitParameters(Rng& rng) {}
  // Multiply-adds x2 of one sample's forward pass (for the FLOP limit).
  virtual int64_t ForwardFlopsPerSample() const { return 0; }
  // Asks the layer to apply max(x, 0) to its own output, and to take the
  // gradient it is given in Backward as the gradient of that rectified
  // output, so that the ReLU right after it can pass both through
  // (core/layers/fusion.h). Returns false, changing nothing, when the layer
  // cannot. Call before the first Forward.
  virtual bool AbsorbFollowingRelu() { return false; }
  // While `on`, Backward adds each parameter's gradient to its `grad`
  // instead of overwriting it, so the gradients of several batches sum in
  // place. Returns false, changing nothing, when the layer cannot (a layer
  // without parameters trivially can); turning it off always succeeds.
  virtual bool SetAccumulateGradients(bool on) { return !on || parameters().empty(); }
  // The weight the caller gives the loss of the batch in the following
  // Backwards (1 unless set): a layer that adds a loss of its own (the MoE
  // layer's load-balancing loss) weights its gradient alike, so the two
  // stay in proportion when a batch's loss is one weighted share of a
  // larger one. Others ignore it.
  virtual void SetLossWeight(float /*weight*/) {}

 protected:
  // Batch input shape {N, input_shape...}.
  Shape BatchShape(int64_t n, const Shape& per_sample) const;

 private:
  std::string name_;
  Shape input_shape_;
};

// Layers run one after another, each taking the previous one's output.
using LayerChain = std::vector<std::unique_ptr<Layer>>;

}  // namespace strata

#endif  // STRATA_CORE_LAYERS_LAYER_H_
