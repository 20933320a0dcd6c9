#include "tools/netem/bandwidth_schedule.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status.h"
#include "core/util/log.h"

namespace strata {

std::optional<double> ParseScheduleOffset(const std::string& text) {
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "0") return 0.0;
  for (const auto& [unit, scale] :
       {std::pair<const char*, double>{"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}}) {
    if (!absl::EndsWith(t, unit) || t.size() <= std::string(unit).size()) continue;
    double value = 0;
    if (absl::SimpleAtod(t.substr(0, t.size() - std::string(unit).size()), &value) &&
        std::isfinite(value) && value >= 0) {
      return value * scale;
    }
    return std::nullopt;  // "ms" must not be retried as "s"
  }
  return std::nullopt;
}

absl::StatusOr<BandwidthSchedule> ParseBandwidthSchedule(const std::string& text) {
  const auto refuse = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--bandwidth-schedule \"", text, "\": ", why,
                                                   " (e.g. 1gbit@0,100mbit@60s,1gbit@120s)"));
  };
  if (text.empty()) return refuse("empty");
  BandwidthSchedule schedule;
  for (const std::string& entry : std::vector<std::string>(absl::StrSplit(text, ','))) {
    const std::vector<std::string> parts = absl::StrSplit(entry, '@');
    if (parts.size() != 2) return refuse(absl::StrCat("entry \"", entry, "\" is not RATE@TIME"));
    absl::StatusOr<double> rate = ParseBandwidth(parts[0]);
    if (!rate.ok()) return refuse(absl::StrCat("entry \"", entry, "\": ", rate.status().message()));
    const std::optional<double> at = ParseScheduleOffset(parts[1]);
    if (!at.has_value()) {
      return refuse(absl::StrCat("entry \"", entry, "\": time \"", parts[1],
                                 "\" is not 0 or a number with ms, s or m"));
    }
    if (schedule.empty() && *at != 0) {
      return refuse(absl::StrCat("the first entry \"", entry, "\" must be at 0"));
    }
    if (!schedule.empty() && !(*at > schedule.back().at_seconds)) {
      return refuse(absl::StrCat("entry \"", entry, "\" is not later than the one before"));
    }
    schedule.push_back({*at, *rate, parts[0]});
  }
  return schedule;
}

std::string FormatBandwidthSchedule(const BandwidthSchedule& schedule) {
  return absl::StrJoin(schedule, ",", [](std::string* out, const RateChange& c) {
    absl::StrAppend(out, c.rate, "@", c.at_seconds, "s");
  });
}

absl::Status ScheduledRates::Apply(double seconds, EmulatedNetwork& network,
                                   std::vector<ScheduledChange>* made) {
  while (next_ < schedule_.size() && schedule_[next_].at_seconds <= seconds) {
    const RateChange& change = schedule_[next_];
    STRATA_RETURN_IF_ERROR(network.SetRate(change.bytes_per_second));
    if (made != nullptr) {
      made->push_back({absl::StrCat("links now ", change.rate), change.at_seconds});
    }
    LogInfo("bandwidth schedule: links now %s (change %zu of %zu, due at %gs, made at %.1fs)",
            change.rate.c_str(), next_, schedule_.size() - 1, change.at_seconds, seconds);
    ++next_;
  }
  return absl::OkStatus();
}

}  // namespace strata
