#include "scheduler/secbad/knob_context.h"

#include "absl/strings/str_cat.h"
#include "scheduler/secbad/link_rate_context.h"
#include "scheduler/secbad/worker_speed_context.h"

namespace strata::secbad {

std::string KnobContext::Best(const std::vector<double>& context) const {
  std::string best;
  double best_seconds = 0;
  for (const std::string& value : values()) {
    const double t = IterationSeconds(value, context);
    if (best.empty() || t < best_seconds) {
      best = value;
      best_seconds = t;
    }
  }
  return best;
}

int KnobContext::IndexOf(const std::string& value) const {
  const std::vector<std::string>& all = values();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i] == value) return static_cast<int>(i);
  }
  return -1;
}

absl::StatusOr<std::shared_ptr<const KnobContext>> KnobContextFromJson(
    const nlohmann::json& json, const std::string& source) {
  const std::string kind =
      json.is_object() && json.contains("context") && json["context"].is_string()
          ? json["context"].get<std::string>()
          : "link-rate";
  if (kind == "link-rate") return LinkRateContext::FromJson(json, source);
  if (kind == "worker-speed") return WorkerSpeedContext::FromJson(json, source);
  return absl::InvalidArgumentError(absl::StrCat(source, ".context: unknown kind \"", kind,
                                                 "\" (link-rate or worker-speed)"));
}

}  // namespace strata::secbad
