// Model: the layers of a job config, built and chained, with the Stanza split
// between the conv trunk (layers [0, split)) and the head ([split, end)).
//
// Parameters are listed in layer order; a parameter's index in that list is
// its key (stable for a given config, on every process of a cluster).
//
//   STRATA_ASSIGN_OR_RETURN(auto model, Model::Build(config.model, /*seed=*/1));
//   Tensor logits = model->Forward(images, /*training=*/true);
//   model->Backward(grad_logits);     // fills every parameter's grad
#ifndef STRATA_CORE_MODEL_MODEL_H_
#define STRATA_CORE_MODEL_MODEL_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/model/job_config.h"
#include "core/ops/backend.h"
#include "core/util/wait_observer.h"

namespace strata {

class Model {
 public:
  // Builds the layers, checks that their shapes chain from `config.input` to
  // {classes}, and initialises parameters from `seed`. The layers compute
  // through `backend` (core/ops/backend.h); a layer type that does not run
  // on its device is refused. Errors name the layer by its config path:
  // "model.layers[4] (linear \"fc1\"): ...".
  static absl::StatusOr<std::unique_ptr<Model>> Build(const ModelConfig& config, uint64_t seed,
                                                      const Backend& backend = HostBackend());

  // What the layers compute with; Forward takes tensors on its device
  // (ToDevice, core/ops/backend.h).
  const Backend& backend() const { return backend_; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  Layer& layer(int i) { return *layers_[i]; }
  // Index of the first head layer (num_layers() when the model has no split).
  int split_index() const { return split_index_; }
  // OK when the config names a split (model.split_after); stanza needs one.
  absl::Status RequireSplit() const;
  const Shape& input_shape() const { return input_shape_; }
  // Per-sample shape of the activations at the split.
  Shape boundary_shape() const;

  // Told of the point between every two layers that Forward and Backward
  // run (WaitObserver::MayYield), so a device shared by several jobs can
  // change hands there; null (the default): nobody. Call from the thread
  // that runs the model.
  void set_wait_observer(WaitObserver* observer) { observer_ = observer; }

  // Runs layers [begin, end) forward. Defaults: the whole model.
  Tensor Forward(const Tensor& input, bool training, int begin = 0, int end = -1);
  // Runs layers [begin, end) backward from dL/d(output of layer end-1).
  // Returns dL/d(input of layer begin) if `need_input_grad`, else undefined.
  // `after_layer(i)`, when given, runs as soon as layer i's parameter
  // gradients are final (last layer first), so they can be sent while the
  // earlier layers are still in backward.
  Tensor Backward(const Tensor& grad_output, int begin = 0, int end = -1,
                  bool need_input_grad = false,
                  const std::function<void(int)>& after_layer = nullptr);

  // Layer::SetAccumulateGradients(on) for layers [begin, end); returns the
  // parameters of those that cannot, whose Backward keeps overwriting their
  // gradients.
  std::vector<Parameter*> SetAccumulateGradients(bool on, int begin = 0, int end = -1);
  // Layer::SetLossWeight(weight) for layers [begin, end).
  void SetLossWeight(float weight, int begin = 0, int end = -1);

  // Parameters of layers [begin, end), in order. Defaults: all of them.
  std::vector<Parameter*> parameters(int begin = 0, int end = -1);
  std::vector<StateBuffer*> state_buffers();
  int64_t num_parameter_elements() const;
  // Forward multiply-add FLOPs of one sample (x2 per multiply-add).
  int64_t ForwardFlopsPerSample() const;
  // FLOPs of one sample's training step: forward, input gradient and weight
  // gradient (each about the forward's cost), without the first layer's
  // input gradient, which training never computes.
  int64_t TrainingFlopsPerSample() const;

 private:
  explicit Model(const Backend& backend) : backend_(backend) {}
  int End(int end) const { return end < 0 ? num_layers() : end; }

  // Between two layers of a Forward or Backward.
  void BetweenLayers() {
    if (observer_ != nullptr) observer_->MayYield();
  }

  const Backend& backend_;
  std::vector<std::unique_ptr<Layer>> layers_;
  WaitObserver* observer_ = nullptr;
  int split_index_ = 0;
  Shape input_shape_;
};

}  // namespace strata

#endif  // STRATA_CORE_MODEL_MODEL_H_
