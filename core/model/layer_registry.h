// LayerRegistry: the layer types a job config's model.layers may name. Each
// type says how its own fields are read from the config, how a layer is
// built, and which of its fields define it (the job identity). Core's types
// (conv2d, relu, pooling, batchnorm2d, flatten, linear, dropout) are there
// from the start; a module above core registers its own the same way, so
// core never names it (moe/ registers "moe": moe/moe_layer_type.cc).
//
//   LayerType t;
//   t.name = "moe";
//   t.parse = [](JsonObjectReader& r, LayerSpec* spec) { ... spec->options = MoeSpec{...}; };
//   t.build = [](const LayerSpec& spec, const Shape& input, const LayerBuildContext& c) { ... };
//   t.identity = [](const LayerSpec& spec) { return nlohmann::json{...}; };
//   LayerRegistry::Global().Register(std::move(t));
//
// Thread safety: register before building models (at static initialisation
// or at the start of main); lookups may then run on any thread.
#ifndef STRATA_CORE_MODEL_LAYER_REGISTRY_H_
#define STRATA_CORE_MODEL_LAYER_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/layers/layer.h"
#include "core/model/job_config.h"
#include "core/ops/backend.h"
#include "core/util/json_reader.h"

namespace strata {

// What a layer is built with beside its spec and input shape.
struct LayerBuildContext {
  // The layer's own random stream (for noise or dropout masks; parameters
  // are initialised later by the model).
  uint64_t seed = 0;
  // What it computes with; its device is one of the type's `devices`.
  const Backend* backend = nullptr;
};

struct LayerType {
  std::string name;
  // Reads the type's own fields of one model.layers entry (type and name
  // are read already); errors name the field by its path. Types with
  // fields beyond LayerSpec's keep them in spec->options.
  std::function<absl::Status(JsonObjectReader& reader, LayerSpec* spec)> parse;
  // Builds the layer for a per-sample `input` shape.
  std::function<absl::StatusOr<std::unique_ptr<Layer>>(const LayerSpec& spec, const Shape& input,
                                                       const LayerBuildContext& context)>
      build;
  // The devices its layers run on: a model built on a backend of another
  // device is refused, naming the first layer that cannot run there.
  std::vector<Device> devices = {Device::kCpu};
  // The fields that define a layer of this type beside its type and name:
  // every process of a job must agree on them.
  std::function<nlohmann::json(const LayerSpec& spec)> identity;
};

class LayerRegistry {
 public:
  // The process's registry, with core's layer types.
  static LayerRegistry& Global();

  // AlreadyExists for a name registered before.
  absl::Status Register(LayerType type);
  // The type named `name`, or nullptr.
  const LayerType* Find(const std::string& name) const;
  // Every registered name, sorted ("conv2d, dropout, ...").
  std::vector<std::string> names() const;

 private:
  std::map<std::string, LayerType> types_;
};

}  // namespace strata

#endif  // STRATA_CORE_MODEL_LAYER_REGISTRY_H_
