#include "core/model/layer_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/layers/activation.h"
#include "core/layers/batchnorm2d.h"
#include "core/layers/conv2d.h"
#include "core/layers/linear.h"
#include "core/layers/pool2d.h"
#include "core/layers/residual.h"
#include "core/status.h"

namespace strata {
namespace {

using nlohmann::json;

json WindowIdentity(const LayerSpec& s) {
  return {{"kernel", s.kernel}, {"stride", s.stride}, {"padding", s.padding}};
}

absl::Status ParseWindow(JsonObjectReader& r, LayerSpec* s) {
  STRATA_RETURN_IF_ERROR(r.Optional("kernel", &s->kernel));
  STRATA_RETURN_IF_ERROR(r.Optional("stride", &s->stride));
  return r.Optional("padding", &s->padding);
}

LayerType Conv2dType() {
  LayerType t;
  t.name = "conv2d";
  t.parse = [](JsonObjectReader& r, LayerSpec* s) {
    s->kernel = 3;
    s->stride = 1;
    STRATA_RETURN_IF_ERROR(r.Required("out_channels", &s->out_channels));
    STRATA_RETURN_IF_ERROR(r.Optional("bias", &s->bias));
    STRATA_RETURN_IF_ERROR(r.Optional("algorithm", &s->algorithm));
    if (absl::Status known = ParseConvAlgorithm(s->algorithm).status(); !known.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(r.ChildPath("algorithm"), ": ", known.message()));
    }
    return ParseWindow(r, s);
  };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    STRATA_ASSIGN_OR_RETURN(ConvAlgorithm algorithm, ParseConvAlgorithm(s.algorithm));
    return Conv2d::Create(
        s.name, input,
        Conv2dOptions{s.out_channels, s.kernel, s.stride, s.padding, s.bias, algorithm},
        *c.backend);
  };
  // The algorithm is left out: it changes how the layer computes (and its
  // rounding), not what, so processes may differ in it.
  t.identity = [](const LayerSpec& s) {
    json j = WindowIdentity(s);
    j["out_channels"] = s.out_channels;
    j["bias"] = s.bias;
    return j;
  };
  t.devices = kEveryDevice;
  return t;
}

// maxpool2d, avgpool2d (a window) and global_avgpool (the whole image).
LayerType PoolType(const std::string& name) {
  LayerType t;
  t.name = name;
  const bool global = name == "global_avgpool";
  t.parse = [global](JsonObjectReader& r, LayerSpec* s) {
    if (global) return absl::OkStatus();
    s->kernel = 2;
    return ParseWindow(r, s);
  };
  t.build = [name, global](const LayerSpec& s, const Shape& input,
                           const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    Pool2dOptions o;
    o.kind = name == "maxpool2d" ? PoolKind::kMax : PoolKind::kAverage;
    o.kernel = s.kernel;
    o.stride = s.stride;
    o.padding = s.padding;
    o.global = global;
    return Pool2d::Create(s.name, input, o, *c.backend);
  };
  t.identity = [global](const LayerSpec& s) { return global ? json::object() : WindowIdentity(s); };
  t.devices = kEveryDevice;
  return t;
}

LayerType BatchNormType() {
  LayerType t;
  t.name = "batchnorm2d";
  t.parse = [](JsonObjectReader& r, LayerSpec* s) {
    STRATA_RETURN_IF_ERROR(r.Optional("epsilon", &s->epsilon));
    return r.Optional("momentum", &s->momentum);
  };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return BatchNorm2d::Create(s.name, input, BatchNormOptions{s.epsilon, s.momentum}, *c.backend);
  };
  t.identity = [](const LayerSpec& s) {
    return json{{"epsilon", s.epsilon}, {"momentum", s.momentum}};
  };
  t.devices = kEveryDevice;
  return t;
}

LayerType LinearType() {
  LayerType t;
  t.name = "linear";
  t.parse = [](JsonObjectReader& r, LayerSpec* s) {
    return r.Required("out_features", &s->out_features);
  };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return Linear::Create(s.name, input, s.out_features, *c.backend);
  };
  t.identity = [](const LayerSpec& s) { return json{{"out_features", s.out_features}}; };
  t.devices = kEveryDevice;
  return t;
}

LayerType DropoutType() {
  LayerType t;
  t.name = "dropout";
  t.parse = [](JsonObjectReader& r, LayerSpec* s) { return r.Optional("p", &s->p); };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return Dropout::Create(s.name, input, s.p, c.seed, *c.backend);
  };
  t.identity = [](const LayerSpec& s) { return json{{"p", s.p}}; };
  t.devices = kEveryDevice;
  return t;
}

// relu: no fields; computes on any backend's device.
LayerType ReluType() {
  LayerType t;
  t.name = "relu";
  t.parse = [](JsonObjectReader&, LayerSpec*) { return absl::OkStatus(); };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return std::unique_ptr<Layer>(new Relu(s.name, input, *c.backend));
  };
  t.identity = [](const LayerSpec&) { return json::object(); };
  t.devices = kEveryDevice;
  return t;
}

// flatten: no fields; a view, on any device.
LayerType FlattenType() {
  LayerType t;
  t.name = "flatten";
  t.parse = [](JsonObjectReader&, LayerSpec*) { return absl::OkStatus(); };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext&) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return std::unique_ptr<Layer>(new Flatten(s.name, input));
  };
  t.identity = [](const LayerSpec&) { return json::object(); };
  t.devices = kEveryDevice;
  return t;
}

absl::StatusOr<LayerChain> BuildChain(const LayerSpec& block, const std::vector<LayerSpec>& specs,
                                      const Shape& input, const LayerBuildContext& context,
                                      uint64_t stream) {
  LayerChain chain;
  Shape shape = input;
  for (size_t i = 0; i < specs.size(); ++i) {
    LayerBuildContext own = context;
    own.seed = DeriveSeed(context.seed, stream + i);
    absl::StatusOr<std::unique_ptr<Layer>> layer = BuildLayer(specs[i], shape, own);
    if (!layer.ok()) {
      // The block's label comes from whoever built the block; the part's
      // own path is named relative to it ("body[1] (conv2d ...)").
      const std::string label = LayerLabel(specs[i]);
      return WithContext(layer.status(),
                         label.substr(std::min(label.size(), block.path.size() + 1)));
    }
    shape = (*layer)->output_shape();
    chain.push_back(*std::move(layer));
  }
  return chain;
}

json ChainIdentity(const std::vector<LayerSpec>& specs) {
  json j = json::array();
  for (const LayerSpec& s : specs) j.push_back(LayerIdentity(s));
  return j;
}

// residual: "body" (a non-empty list of layers) and "shortcut" (a list;
// absent or empty: the identity), summed.
LayerType ResidualType() {
  LayerType t;
  t.name = "residual";
  t.parse = [](JsonObjectReader& r, LayerSpec* s) -> absl::Status {
    STRATA_ASSIGN_OR_RETURN(const json* body, r.Child("body"));
    const std::string prefix = s->name + ".";
    STRATA_ASSIGN_OR_RETURN(s->body, ParseLayerList(*body, r.ChildPath("body"), prefix));
    if (s->body.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(r.ChildPath("body"), ": expected a non-empty array of layers"));
    }
    if (r.Has("shortcut")) {
      STRATA_ASSIGN_OR_RETURN(const json* shortcut, r.Child("shortcut"));
      STRATA_ASSIGN_OR_RETURN(s->shortcut,
                              ParseLayerList(*shortcut, r.ChildPath("shortcut"), prefix));
    }
    return absl::OkStatus();
  };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext& c) -> absl::StatusOr<std::unique_ptr<Layer>> {
    STRATA_ASSIGN_OR_RETURN(LayerChain body, BuildChain(s, s.body, input, c, 0));
    STRATA_ASSIGN_OR_RETURN(LayerChain shortcut,
                            BuildChain(s, s.shortcut, input, c, s.body.size()));
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<Residual> block,
        Residual::Create(s.name, input, std::move(body), std::move(shortcut), *c.backend));
    return std::unique_ptr<Layer>(std::move(block));
  };
  t.identity = [](const LayerSpec& s) {
    return json{{"body", ChainIdentity(s.body)}, {"shortcut", ChainIdentity(s.shortcut)}};
  };
  // Its sum runs on any device; its parts are checked one by one.
  t.devices = kEveryDevice;
  return t;
}

absl::StatusOr<LayerSpec> ParseLayer(const json& j, const std::string& path,
                                     const std::string& name_prefix,
                                     std::map<std::string, int>* ordinals) {
  JsonObjectReader r(j, path);
  LayerSpec spec;
  spec.path = path;
  STRATA_RETURN_IF_ERROR(r.Required("type", &spec.type));
  const LayerType* type = LayerRegistry::Global().Find(spec.type);
  if (type == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".type: unknown layer type \"", spec.type,
                     "\" (known: ", absl::StrJoin(LayerRegistry::Global().names(), ", "), ")"));
  }
  spec.name = absl::StrCat(spec.type, ++(*ordinals)[spec.type]);
  STRATA_RETURN_IF_ERROR(r.Optional("name", &spec.name));
  if (spec.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ".name: must not be empty"));
  }
  spec.name = name_prefix + spec.name;
  STRATA_RETURN_IF_ERROR(type->parse(r, &spec));
  STRATA_RETURN_IF_ERROR(r.Finish());
  return spec;
}

}  // namespace

absl::StatusOr<std::vector<LayerSpec>> ParseLayerList(const json& list, const std::string& path,
                                                      const std::string& name_prefix) {
  if (!list.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected an array of layers"));
  }
  std::map<std::string, int> ordinals;
  std::vector<LayerSpec> specs;
  for (size_t i = 0; i < list.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(LayerSpec spec, ParseLayer(list[i], absl::StrCat(path, "[", i, "]"),
                                                       name_prefix, &ordinals));
    specs.push_back(std::move(spec));
  }
  return specs;
}

absl::StatusOr<std::unique_ptr<Layer>> BuildLayer(const LayerSpec& spec, const Shape& input,
                                                  const LayerBuildContext& context) {
  const LayerType* type = LayerRegistry::Global().Find(spec.type);
  if (type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown layer type \"", spec.type, "\""));
  }
  const Backend& backend = *context.backend;
  if (std::find(type->devices.begin(), type->devices.end(), backend.device()) ==
      type->devices.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec.type, " layers do not run on the ", backend.name(), " backend"));
  }
  return type->build(spec, input, context);
}

std::string LayerLabel(const LayerSpec& spec) {
  return absl::StrCat(spec.path, " (", spec.type, " \"", spec.name, "\")");
}

json LayerIdentity(const LayerSpec& spec) {
  json j = {{"type", spec.type}, {"name", spec.name}};
  if (const LayerType* type = LayerRegistry::Global().Find(spec.type); type != nullptr) {
    const json fields = type->identity(spec);  // outlives the loop over its items
    for (const auto& [field, value] : fields.items()) j[field] = value;
  }
  return j;
}

LayerRegistry& LayerRegistry::Global() {
  static LayerRegistry* registry = [] {
    auto* r = new LayerRegistry();
    for (LayerType t : {Conv2dType(), PoolType("maxpool2d"), PoolType("avgpool2d"),
                        PoolType("global_avgpool"), BatchNormType(), LinearType(), DropoutType(),
                        ReluType(), FlattenType(), ResidualType()}) {
      (void)r->Register(std::move(t));
    }
    return r;
  }();
  return *registry;
}

absl::Status LayerRegistry::Register(LayerType type) {
  if (type.name.empty() || !type.parse || !type.build || !type.identity) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer type \"", type.name, "\" needs a name, parse, build and identity"));
  }
  const std::string name = type.name;
  if (!types_.emplace(name, std::move(type)).second) {
    return absl::AlreadyExistsError(absl::StrCat("layer type \"", name, "\" is registered twice"));
  }
  return absl::OkStatus();
}

const LayerType* LayerRegistry::Find(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second;
}

std::vector<std::string> LayerRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, type] : types_) out.push_back(name);
  return out;
}

}  // namespace strata
