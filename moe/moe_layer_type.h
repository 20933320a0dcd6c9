// The "moe" layer type of job configs (core/model/layer_registry.h): its
// config fields, the layer it builds, the fields that define it. moe/ owns
// all three, so core never names an MoE layer.
//
//   {"type": "moe", "name": "moe", "experts": 8, "hidden": 1024, "top_k": 2,
//    "capacity_factor": 1.25, "pipeline_chunks": 1, "parallelism": "expert"}
//
// A binary (or test) that reads configs calls RegisterMoe() once before it
// parses one (RegisterModules, startup/program_startup.h, does); without it
// "moe" is an unknown layer type. It also
// registers the MoE runtime knobs (core/control/knobs.h), which an expert
// group's processes apply at an iteration boundary: neither changes what
// the layer computes (expert_parallel.h: every d and r, the same result up
// to float summation order).
#ifndef STRATA_MOE_MOE_LAYER_TYPE_H_
#define STRATA_MOE_MOE_LAYER_TYPE_H_

#include <cstdint>
#include <string>

#include "core/model/job_config.h"
#include "moe/expert_parallel.h"

namespace strata::moe {

// The fields of a "moe" layer (their meaning: moe/moe_layer.h, moe/routing.h).
struct MoeSpec {
  int64_t experts = 0;  // required
  int64_t top_k = 2;
  int64_t hidden = 0;  // required: each expert's FFN width
  float capacity_factor = 1.25f;
  int64_t capacity_alignment = 1;
  float gate_noise = 0.0f;
  float aux_loss_weight = 0.01f;
  bool normalize_gate = true;
  bool batch_prioritized = false;
  // Over several FC workers (moe/expert_parallel.h): the starting pipelining
  // degree d and parallelism r ("expert": tokens travel, "data": weights do).
  int64_t pipeline_chunks = 1;
  ExpertParallelism parallelism = ExpertParallelism::kExpert;
};

// The MoE fields of a parsed "moe" layer (CHECK-fails on another type).
const MoeSpec& MoeSpecOf(const LayerSpec& spec);

// Knob names: the pipelining degree d (an integer in [1, 64]) and the
// parallelism r ("expert" or "data") of every MoE layer of an expert group.
inline constexpr char kPipelineChunksKnob[] = "moe.pipeline_chunks";
inline constexpr char kParallelismKnob[] = "moe.parallelism";

// Sets the field of `settings` that knob `name` controls to `value`.
// InvalidArgument for a value the knob refuses or a name that is not an
// MoE knob.
absl::Status ApplyMoeKnob(const std::string& name, const std::string& value,
                          ParallelSettings* settings);

// Registers "moe" with the process's layer registry, the MoE knobs with its
// knob catalogue and the expert blocks' wire service with the envelope's
// names; calls after the first do nothing.
void RegisterMoe();

}  // namespace strata::moe

#endif  // STRATA_MOE_MOE_LAYER_TYPE_H_
