#include "core/model/layer_registry.h"

#include "absl/strings/str_cat.h"
#include "core/layers/activation.h"
#include "core/layers/batchnorm2d.h"
#include "core/layers/conv2d.h"
#include "core/layers/linear.h"
#include "core/layers/pool2d.h"
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
    return ParseWindow(r, s);
  };
  t.build = [](const LayerSpec& s, const Shape& input,
               const LayerBuildContext&) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return Conv2d::Create(s.name, input,
                          Conv2dOptions{s.out_channels, s.kernel, s.stride, s.padding});
  };
  t.identity = [](const LayerSpec& s) {
    json j = WindowIdentity(s);
    j["out_channels"] = s.out_channels;
    return j;
  };
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
                           const LayerBuildContext&) -> absl::StatusOr<std::unique_ptr<Layer>> {
    Pool2dOptions o;
    o.kind = name == "maxpool2d" ? PoolKind::kMax : PoolKind::kAverage;
    o.kernel = s.kernel;
    o.stride = s.stride;
    o.padding = s.padding;
    o.global = global;
    return Pool2d::Create(s.name, input, o);
  };
  t.identity = [global](const LayerSpec& s) { return global ? json::object() : WindowIdentity(s); };
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
               const LayerBuildContext&) -> absl::StatusOr<std::unique_ptr<Layer>> {
    return BatchNorm2d::Create(s.name, input, BatchNormOptions{s.epsilon, s.momentum});
  };
  t.identity = [](const LayerSpec& s) {
    return json{{"epsilon", s.epsilon}, {"momentum", s.momentum}};
  };
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
  t.devices = {Device::kCpu, Device::kCuda};
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
  t.devices = {Device::kCpu, Device::kCuda};
  return t;
}

}  // namespace

LayerRegistry& LayerRegistry::Global() {
  static LayerRegistry* registry = [] {
    auto* r = new LayerRegistry();
    for (LayerType t :
         {Conv2dType(), PoolType("maxpool2d"), PoolType("avgpool2d"), PoolType("global_avgpool"),
          BatchNormType(), LinearType(), DropoutType(), ReluType(), FlattenType()}) {
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
