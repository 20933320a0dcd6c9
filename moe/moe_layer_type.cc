#include "moe/moe_layer_type.h"

#include "absl/strings/str_cat.h"
#include "core/model/layer_registry.h"
#include "core/status.h"
#include "moe/moe_layer.h"

namespace strata::moe {
namespace {

absl::Status Positive(int64_t value, const std::string& path) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(path, ": must be > 0, got ", value));
}

absl::Status Parse(JsonObjectReader& r, LayerSpec* spec) {
  const std::string& path = spec->path;
  MoeSpec moe;
  STRATA_RETURN_IF_ERROR(r.Required("experts", &moe.experts));
  STRATA_RETURN_IF_ERROR(r.Required("hidden", &moe.hidden));
  STRATA_RETURN_IF_ERROR(r.Optional("top_k", &moe.top_k));
  STRATA_RETURN_IF_ERROR(r.Optional("capacity_factor", &moe.capacity_factor));
  STRATA_RETURN_IF_ERROR(r.Optional("capacity_alignment", &moe.capacity_alignment));
  STRATA_RETURN_IF_ERROR(r.Optional("gate_noise", &moe.gate_noise));
  STRATA_RETURN_IF_ERROR(r.Optional("aux_loss_weight", &moe.aux_loss_weight));
  STRATA_RETURN_IF_ERROR(r.Optional("normalize_gate", &moe.normalize_gate));
  STRATA_RETURN_IF_ERROR(r.Optional("batch_prioritized", &moe.batch_prioritized));
  STRATA_RETURN_IF_ERROR(r.Optional("pipeline_chunks", &moe.pipeline_chunks));
  std::string parallelism = ParallelismName(moe.parallelism);
  STRATA_RETURN_IF_ERROR(r.Optional("parallelism", &parallelism));
  STRATA_RETURN_IF_ERROR(Positive(moe.pipeline_chunks, path + ".pipeline_chunks"));
  absl::StatusOr<ExpertParallelism> parsed = ParseParallelism(parallelism);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".parallelism: \"", parallelism, "\" is not expert or data"));
  }
  moe.parallelism = *parsed;
  STRATA_RETURN_IF_ERROR(Positive(moe.experts, path + ".experts"));
  STRATA_RETURN_IF_ERROR(Positive(moe.hidden, path + ".hidden"));
  STRATA_RETURN_IF_ERROR(Positive(moe.capacity_alignment, path + ".capacity_alignment"));
  if (moe.top_k < 1 || moe.top_k > moe.experts) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ".top_k: must be in [1, experts = ", moe.experts, "], got ", moe.top_k));
  }
  if (moe.gate_noise < 0 || moe.aux_loss_weight < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": gate_noise and aux_loss_weight must be >= 0"));
  }
  spec->options = moe;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Layer>> Build(const LayerSpec& spec, const Shape& input,
                                             uint64_t seed) {
  const MoeSpec& m = MoeSpecOf(spec);
  MoeOptions o;
  o.experts = static_cast<int>(m.experts);
  o.top_k = static_cast<int>(m.top_k);
  o.hidden = m.hidden;
  o.capacity.factor = m.capacity_factor;
  o.capacity.alignment = m.capacity_alignment;
  o.gate_noise = m.gate_noise;
  o.aux_loss_weight = m.aux_loss_weight;
  o.normalize_gate = m.normalize_gate;
  o.batch_prioritized = m.batch_prioritized;
  o.parallel.chunks = static_cast<int>(m.pipeline_chunks);
  o.parallel.parallelism = m.parallelism;
  o.noise_seed = seed;
  return MoeLayer::Create(spec.name, input, o);
}

// What every process must agree on: the layer's shape and routing. The
// pipelining degree and parallelism are not among them (they never change
// the math, and a running job may change them).
nlohmann::json Identity(const LayerSpec& spec) {
  const MoeSpec& m = MoeSpecOf(spec);
  return {{"experts", m.experts},
          {"top_k", m.top_k},
          {"hidden", m.hidden},
          {"capacity_factor", m.capacity_factor},
          {"capacity_alignment", m.capacity_alignment},
          {"gate_noise", m.gate_noise},
          {"aux_loss_weight", m.aux_loss_weight},
          {"normalize_gate", m.normalize_gate},
          {"batch_prioritized", m.batch_prioritized}};
}

}  // namespace

const MoeSpec& MoeSpecOf(const LayerSpec& spec) {
  const MoeSpec* m = std::any_cast<MoeSpec>(&spec.options);
  STRATA_CHECK(m != nullptr, absl::StrCat(spec.path, " is not a parsed moe layer"));
  return *m;
}

void RegisterMoeLayerType() {
  static const bool registered = [] {
    LayerType t;
    t.name = "moe";
    t.parse = Parse;
    t.build = Build;
    t.identity = Identity;
    return LayerRegistry::Global().Register(std::move(t)).ok();
  }();
  (void)registered;
}

}  // namespace strata::moe
