#include "core/model/model.h"

#include "absl/strings/str_cat.h"
#include "core/layers/fusion.h"
#include "core/model/layer_registry.h"
#include "core/status.h"

namespace strata {

absl::StatusOr<std::unique_ptr<Model>> Model::Build(const ModelConfig& config, uint64_t seed,
                                                    const Backend& backend) {
  std::unique_ptr<Model> model(new Model(backend));
  model->input_shape_ = config.input;
  model->split_index_ = config.split_index;
  Shape shape = config.input;
  for (size_t i = 0; i < config.layers.size(); ++i) {
    const LayerSpec& spec = config.layers[i];
    LayerBuildContext context;
    context.seed = DeriveSeed(seed, 1000 + i);  // the layer's own random stream
    context.backend = &backend;
    absl::StatusOr<std::unique_ptr<Layer>> layer = BuildLayer(spec, shape, context);
    if (!layer.ok()) return WithContext(layer.status(), LayerLabel(spec));
    shape = (*layer)->output_shape();
    model->layers_.push_back(*std::move(layer));
  }
  if (shape != Shape{config.classes}) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.layers: the last layer outputs ", shape.ToString(),
                     " per sample, but the model has ", config.classes,
                     " classes (end with a linear layer of out_features ", config.classes, ")"));
  }
  // Each side of the split fuses on its own: the two may run on different
  // processes.
  const size_t split = static_cast<size_t>(model->split_index_);
  FuseRelus(model->layers_, 0, split);
  FuseRelus(model->layers_, split, model->layers_.size());
  // Each layer draws from its own stream, so adding a layer does not change
  // the initial values of the others.
  for (size_t i = 0; i < model->layers_.size(); ++i) {
    Rng rng(DeriveSeed(seed, i));
    model->layers_[i]->InitParameters(rng);
  }
  return model;
}

Shape Model::boundary_shape() const {
  if (split_index_ == 0) return input_shape_;
  return layers_[split_index_ - 1]->output_shape();
}

Tensor Model::Forward(const Tensor& input, bool training, int begin, int end) {
  Tensor x = input;
  for (int i = begin; i < End(end); ++i) {
    if (i > begin) BetweenLayers();
    x = layers_[i]->Forward(x, training);
  }
  return x;
}

Tensor Model::Backward(const Tensor& grad_output, int begin, int end, bool need_input_grad,
                       const std::function<void(int)>& after_layer) {
  Tensor g = grad_output;
  for (int i = End(end) - 1; i >= begin; --i) {
    if (i < End(end) - 1) BetweenLayers();
    g = layers_[i]->Backward(g, /*need_input_grad=*/i > begin || need_input_grad);
    if (after_layer) after_layer(i);
  }
  return g;
}

std::vector<Parameter*> Model::SetAccumulateGradients(bool on, int begin, int end) {
  std::vector<Parameter*> overwritten;
  for (int i = begin; i < End(end); ++i) {
    if (layers_[i]->SetAccumulateGradients(on)) continue;
    for (Parameter* p : layers_[i]->parameters()) overwritten.push_back(p);
  }
  return overwritten;
}

void Model::SetLossWeight(float weight, int begin, int end) {
  for (int i = begin; i < End(end); ++i) layers_[i]->SetLossWeight(weight);
}

std::vector<Parameter*> Model::parameters(int begin, int end) {
  std::vector<Parameter*> out;
  for (int i = begin; i < End(end); ++i) {
    for (Parameter* p : layers_[i]->parameters()) out.push_back(p);
  }
  return out;
}

std::vector<StateBuffer*> Model::state_buffers() {
  std::vector<StateBuffer*> out;
  for (auto& layer : layers_) {
    for (StateBuffer* b : layer->state_buffers()) out.push_back(b);
  }
  return out;
}

int64_t Model::num_parameter_elements() const {
  int64_t n = 0;
  for (Parameter* p : const_cast<Model*>(this)->parameters()) n += p->value.numel();
  return n;
}

absl::Status Model::RequireSplit() const {
  if (split_index_ < num_layers()) return absl::OkStatus();
  return absl::InvalidArgumentError("stanza mode needs model.split_after in the job config");
}

int64_t Model::ForwardFlopsPerSample() const {
  int64_t flops = 0;
  for (const auto& layer : layers_) flops += layer->ForwardFlopsPerSample();
  return flops;
}

int64_t Model::TrainingFlopsPerSample() const {
  int64_t flops = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    flops += layers_[i]->ForwardFlopsPerSample() * (i == 0 ? 2 : 3);
  }
  return flops;
}

}  // namespace strata
