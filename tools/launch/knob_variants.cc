#include "tools/launch/knob_variants.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/control/knobs.h"
#include "core/model/batch_shares.h"
#include "core/model/fc_batching.h"
#include "core/net/wire_format.h"
#include "core/status.h"
#include "moe/moe_layer_type.h"

namespace strata {
namespace {

// Where a config starts each knob: a field of its cluster block, or one of
// every MoE layer.
struct StartField {
  std::string knob;
  bool in_moe_layers = false;
  std::string field;
};

const std::vector<StartField>& StartableKnobs() {
  static const std::vector<StartField> knobs = {
      {kWireFormatKnob, false, "wire_format"},
      {kBatchSharesKnob, false, "batch_shares"},
      {kFcBatchingKnob, false, "fc_batching"},
      {moe::kPipelineChunksKnob, true, "pipeline_chunks"},
      {moe::kParallelismKnob, true, "parallelism"},
  };
  return knobs;
}

const StartField* StartFieldOf(const std::string& knob) {
  for (const StartField& f : StartableKnobs()) {
    if (f.knob == knob) return &f;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<KnobValues> ParseKnobValues(const std::string& text) {
  std::vector<std::string> names;
  for (const StartField& f : StartableKnobs()) names.push_back(f.knob);
  const std::vector<std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (kv.size() != 2 || kv[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--knob \"", text, "\": use NAME=V1,V2 (e.g. wire.format=fp32,bf16)"));
  }
  if (StartFieldOf(kv[0]) == nullptr) {
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
  const StartField* start = StartFieldOf(knob);
  if (start == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown knob ", knob));
  nlohmann::json variant = config;
  if (!start->in_moe_layers) {
    variant["cluster"][start->field] = value;
    return variant;
  }
  const std::string* moe_field = &start->field;
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

}  // namespace strata
