#include "moe/moe_layer_type.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/control/knobs.h"
#include "core/model/layer_registry.h"
#include "core/status.h"
#include "moe/expert_wire.h"
#include "moe/moe_layer.h"

namespace strata::moe {
namespace {

constexpr int kMaxPipelineChunks = 64;

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
                                             const LayerBuildContext& context) {
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
  o.noise_seed = context.seed;
  return MoeLayer::Create(spec.name, input, o, *context.backend);
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

absl::Status ApplyMoeKnob(const std::string& name, const std::string& value,
                          ParallelSettings* settings) {
  if (name == kPipelineChunksKnob) {
    int chunks = 0;
    if (!absl::SimpleAtoi(value, &chunks) || chunks < 1 || chunks > kMaxPipelineChunks) {
      return absl::InvalidArgumentError(
          absl::StrCat("the pipelining degree must be an integer in [1, ", kMaxPipelineChunks,
                       "], got \"", value, "\""));
    }
    settings->chunks = chunks;
    return absl::OkStatus();
  }
  if (name == kParallelismKnob) {
    absl::StatusOr<ExpertParallelism> r = ParseParallelism(value);
    if (!r.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the parallelism must be expert or data, got \"", value, "\""));
    }
    settings->parallelism = *r;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(name, " is not an MoE knob"));
}

void RegisterMoe() {
  static const bool registered = [] {
    LayerType t;
    t.name = "moe";
    t.parse = Parse;
    t.build = Build;
    t.identity = Identity;
    t.devices = kEveryDevice;
    bool ok = LayerRegistry::Global().Register(std::move(t)).ok();
    for (const char* name : {kPipelineChunksKnob, kParallelismKnob}) {
      KnobSpec spec;
      spec.name = name;
      spec.description = name == std::string(kPipelineChunksKnob)
                             ? "pipelining degree d of every MoE layer of the expert group"
                             : "parallelism r (expert: tokens travel; data: weights do)";
      spec.alters_math = false;
      spec.validate = [name = std::string(name)](const std::string& value) {
        ParallelSettings scratch;
        return ApplyMoeKnob(name, value, &scratch);
      };
      ok = KnobCatalog::Global().Register(std::move(spec)).ok() && ok;
    }
    // The expert blocks' service (moe/expert_block.capnp), named in logs.
    ok = RegisterService<wire::moe::Kind>("moe").ok() && ok;
    return ok;
  }();
  (void)registered;
}

}  // namespace strata::moe
