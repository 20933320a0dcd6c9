// LayerRegistry: the layer types a job config's model.layers may name. Each
// type says how its own fields are read from the config, how a layer is
// built, and which of its fields define it (the job identity). Core's types
// (conv2d, relu, pooling, batchnorm2d, flatten, linear, dropout, residual)
// are there from the start; a module above core registers its own the same
// way, so core never names it (moe/ registers "moe": moe/moe_layer_type.cc).
//
// A type that holds layers of its own (residual's body and shortcut) reads,
// builds and names them through ParseLayerList, BuildLayer and
// LayerIdentity below, as the model does its top-level list.
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

// Every device a backend computes on: the `devices` of a layer type that
// computes only through Backend ops.
inline const std::vector<Device> kEveryDevice = {Device::kCpu, Device::kCuda, Device::kCheck};

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

// Reads a JSON array of layer entries found at `path` ("model.layers").
// Entry i's path is "<path>[i]"; its name is `name_prefix` + its "name", or
// + its type and ordinal among the list's layers of that type ("conv2d2")
// when it has none. Errors name the entry's field by its path. Names are
// not checked for uniqueness here (the model checks them all at once).
absl::StatusOr<std::vector<LayerSpec>> ParseLayerList(const nlohmann::json& list,
                                                      const std::string& path,
                                                      const std::string& name_prefix);

// Builds the layer `spec` describes for a per-sample `input` shape on
// `context.backend`; refuses a type that does not run on its device.
absl::StatusOr<std::unique_ptr<Layer>> BuildLayer(const LayerSpec& spec, const Shape& input,
                                                  const LayerBuildContext& context);

// "model.layers[4] (linear \"fc1\")": how errors name a layer.
std::string LayerLabel(const LayerSpec& spec);

// A layer's type and name and the fields its type says define it.
nlohmann::json LayerIdentity(const LayerSpec& spec);

}  // namespace strata

#endif  // STRATA_CORE_MODEL_LAYER_REGISTRY_H_
