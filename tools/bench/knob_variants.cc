#include "tools/bench/knob_variants.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "moe/moe_layer_type.h"
#include "scheduler/knobs.h"

namespace strata::bench {
namespace {

// The knobs a config can start, and the MoE layers' field of each MoE knob.
const std::vector<std::pair<std::string, std::string>>& StartableKnobs() {
  static const std::vector<std::pair<std::string, std::string>> knobs = {
      {kWireFormatKnob, ""},
      {moe::kPipelineChunksKnob, "pipeline_chunks"},
      {moe::kParallelismKnob, "parallelism"},
  };
  return knobs;
}

const std::string* MoeFieldOf(const std::string& knob) {
  for (const auto& [name, field] : StartableKnobs()) {
    if (name == knob) return &field;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<KnobValues> ParseKnobValues(const std::string& text) {
  std::vector<std::string> names;
  for (const auto& [name, field] : StartableKnobs()) names.push_back(name);
  const std::vector<std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (kv.size() != 2 || kv[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--knob \"", text, "\": use NAME=V1,V2 (e.g. wire.format=fp32,bf16)"));
  }
  if (MoeFieldOf(kv[0]) == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--knob \"", text, "\": unknown knob \"", kv[0],
                                                   "\" (a job can start with ",
                                                   absl::StrJoin(names, ", "), ")"));
  }
  KnobValues k;
  k.name = kv[0];
  k.values = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
  if (k.values.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--knob \"", text, "\": lists no value"));
  }
  for (const std::string& v : k.values) {
    absl::Status valid = KnobCatalog::Global().Validate(k.name, v);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--knob \"", text, "\": ", valid.message()));
    }
  }
  return k;
}

absl::StatusOr<nlohmann::json> ConfigStartingWith(const nlohmann::json& config,
                                                  const std::string& knob,
                                                  const std::string& value) {
  const std::string* moe_field = MoeFieldOf(knob);
  if (moe_field == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown knob ", knob));
  nlohmann::json variant = config;
  if (moe_field->empty()) {  // the wire format
    variant["cluster"]["wire_format"] = value;
    return variant;
  }
  int moe_layers = 0;
  for (nlohmann::json& layer : variant["model"]["layers"]) {
    if (layer.value("type", "") != "moe") continue;
    ++moe_layers;
    int64_t chunks = 0;
    if (*moe_field == "pipeline_chunks" && absl::SimpleAtoi(value, &chunks)) {
      layer[*moe_field] = chunks;
    } else {
      layer[*moe_field] = value;
    }
  }
  if (moe_layers == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(knob, " is a knob of MoE layers, and this model has none"));
  }
  return variant;
}

}  // namespace strata::bench
