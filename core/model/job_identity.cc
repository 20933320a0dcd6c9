#include "core/model/job_identity.h"

#include <nlohmann/json.hpp>

namespace strata {
namespace {

using Json = nlohmann::json;

// The fields that define a layer of `spec.type` (those its shape and
// behaviour depend on).
Json LayerIdentity(const LayerSpec& spec) {
  Json j = {{"type", spec.type}, {"name", spec.name}};
  const std::string& t = spec.type;
  if (t == "conv2d" || t == "maxpool2d" || t == "avgpool2d") {
    j["kernel"] = spec.kernel;
    j["stride"] = spec.stride;
    j["padding"] = spec.padding;
  }
  if (t == "conv2d") j["out_channels"] = spec.out_channels;
  if (t == "linear") j["out_features"] = spec.out_features;
  if (t == "dropout") j["p"] = spec.p;
  if (t == "batchnorm2d") {
    j["epsilon"] = spec.epsilon;
    j["momentum"] = spec.momentum;
  }
  if (t == "moe") {
    const MoeSpec& m = spec.moe;
    j["experts"] = m.experts;
    j["top_k"] = m.top_k;
    j["hidden"] = m.hidden;
    j["capacity_factor"] = m.capacity_factor;
    j["capacity_alignment"] = m.capacity_alignment;
    j["gate_noise"] = m.gate_noise;
    j["aux_loss_weight"] = m.aux_loss_weight;
    j["normalize_gate"] = m.normalize_gate;
    j["batch_prioritized"] = m.batch_prioritized;
  }
  return j;
}

}  // namespace

std::string JobIdentity(const JobConfig& config) {
  Json layers = Json::array();
  for (const LayerSpec& spec : config.model.layers) layers.push_back(LayerIdentity(spec));
  const OptimizerConfig& o = config.optimizer;
  const LrScheduleConfig& s = config.schedule;
  const Json identity = {{"data",
                          {{"dataset", config.data.dataset},
                           {"mean", config.data.mean},
                           {"std", config.data.std},
                           {"synthetic_train", config.data.synthetic_train},
                           {"synthetic_test", config.data.synthetic_test}}},
                         {"model",
                          {{"input", config.model.input.dims()},
                           {"classes", config.model.classes},
                           {"split_after", config.model.split_after},
                           {"layers", layers}}},
                         {"optimizer",
                          {{"type", o.type},
                           {"lr", o.lr},
                           {"momentum", o.momentum},
                           {"nesterov", o.nesterov},
                           {"weight_decay", o.weight_decay},
                           {"beta1", o.beta1},
                           {"beta2", o.beta2},
                           {"epsilon", o.epsilon}}},
                         {"schedule",
                          {{"type", s.type},
                           {"warmup_steps", s.warmup_steps},
                           {"step_size", s.step_size},
                           {"gamma", s.gamma},
                           {"min_lr", s.min_lr}}},
                         {"training",
                          {{"batch_size", config.training.batch_size},
                           {"epochs", config.training.epochs},
                           {"max_steps", config.training.max_steps}}}};
  return identity.dump();  // nlohmann::json keeps object keys sorted
}

}  // namespace strata
