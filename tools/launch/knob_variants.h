// Knob variants of a job, for measuring the best static setting of a
// runtime knob (core/control/knobs.h) per context: `strata_bench train --knob
// wire.format=fp32,bf16` runs every cluster mode once per value, the job
// starting with the knob at that value. A knob's start value is where the
// job config says it:
//   wire.format          cluster.wire_format
//   batch.shares         cluster.batch_shares
//   fc.batching          cluster.fc_batching
//   moe.pipeline_chunks  every MoE layer's pipeline_chunks
//   moe.parallelism      every MoE layer's parallelism
#ifndef STRATA_TOOLS_LAUNCH_KNOB_VARIANTS_H_
#define STRATA_TOOLS_LAUNCH_KNOB_VARIANTS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace strata {

struct KnobValues {
  std::string name;                 // "wire.format"
  std::vector<std::string> values;  // {"fp32", "bf16"}
};

// Parses "NAME=V1,V2,...": InvalidArgument for another shape, a knob whose
// start value no config field gives, or a value the knob refuses (each
// named). Needs the knob catalog filled (moe::RegisterMoe for the MoE knobs).
absl::StatusOr<KnobValues> ParseKnobValues(const std::string& text);

// `config` (a job config's JSON) starting with `knob` at `value`.
// InvalidArgument when the config has no place for it (an MoE knob on a
// model without an MoE layer).
absl::StatusOr<nlohmann::json> ConfigStartingWith(const nlohmann::json& config,
                                                  const std::string& knob,
                                                  const std::string& value);

}  // namespace strata

#endif  // STRATA_TOOLS_LAUNCH_KNOB_VARIANTS_H_
