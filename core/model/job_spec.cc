#include "core/model/job_spec.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/status.h"

namespace strata {
namespace {

using Json = nlohmann::json;

constexpr char kSource[] = "the job spec";

}  // namespace

std::string JobSpecText(const JobConfig& config, const std::string& mode) {
  if (config.text.empty()) return "";
  Json j = Json::parse(config.text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  const TrainingConfig& t = config.training;
  j["training"] = {{"batch_size", t.batch_size}, {"epochs", t.epochs},
                   {"max_steps", t.max_steps},   {"seed", t.seed},
                   {"threads", t.threads},       {"log_every", t.log_every},
                   {"evaluate", t.evaluate}};
  const ClusterConfig& c = config.cluster;
  j["cluster"] = {{"mode", c.mode},
                  {"servers", c.servers},
                  {"conv_workers", c.conv_workers},
                  {"fc_workers", c.fc_workers},
                  {"wire_format", c.wire_format},
                  {"batch_shares", c.batch_shares},
                  {"fc_batching", c.fc_batching}};
  return Json{{"config", j}, {"mode", mode}}.dump();
}

absl::StatusOr<JobSpec> ParseJobSpec(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(kSource, " is not a JSON object"));
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "config" && key != "mode") {
      return absl::InvalidArgumentError(
          absl::StrCat(kSource, ": unknown field \"", key, "\" (config, mode)"));
    }
  }
  if (!j.contains("config") || !j["config"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(kSource, ": config: missing or not an object"));
  }
  if (!j.contains("mode") || !j["mode"].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(kSource, ": mode: missing or not a string"));
  }
  JobSpec spec;
  spec.mode = j["mode"].get<std::string>();
  if (spec.mode != "ps" && spec.mode != "stanza") {
    return absl::InvalidArgumentError(
        absl::StrCat(kSource, ": mode \"", spec.mode, "\" (use ps or stanza)"));
  }
  STRATA_ASSIGN_OR_RETURN(spec.config, ParseJobConfig(j["config"].dump(), kSource));
  return spec;
}

}  // namespace strata
