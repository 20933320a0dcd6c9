#include "core/model/job_identity.h"

#include <nlohmann/json.hpp>

#include "core/model/layer_registry.h"

namespace strata {
namespace {

using Json = nlohmann::json;

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
                           {"train_size", config.data.train_size},
                           {"synthetic_test", config.data.synthetic_test},
                           {"augment",
                            {{"crop_padding", config.data.augment.crop_padding},
                             {"horizontal_flip", config.data.augment.horizontal_flip}}}}},
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
                           {"max_steps", config.training.max_steps}}},
                         {"wire_format", config.cluster.wire_format},
                         {"batch_shares", config.cluster.batch_shares},
                         {"fc_batching", config.cluster.fc_batching}};
  return identity.dump();  // nlohmann::json keeps object keys sorted
}

}  // namespace strata
