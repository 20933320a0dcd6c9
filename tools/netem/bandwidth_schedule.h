// BandwidthSchedule: link rates that change while a job runs, for
// `strata_launch --bandwidth-schedule 1gbit@0,100mbit@60s,1gbit@120s`:
// each entry is a rate (as tc writes it, tools/netem/emulated_network.h)
// and the time it takes effect, measured from the launch ("0", "500ms",
// "60s", "2m"). The first entry is at 0 and gives the rate the network is
// built with; times strictly increase.
//
// ScheduledRates applies a schedule to a running EmulatedNetwork: the
// launcher calls Apply with the seconds since the launch as it waits on its
// children, and every change that has come due is made (tc, in place) and
// logged.
//
//   STRATA_ASSIGN_OR_RETURN(BandwidthSchedule s, ParseBandwidthSchedule(text));
//   ScheduledRates rates(s);            // the rate at 0 is s.front()
//   ...
//   STRATA_RETURN_IF_ERROR(rates.Apply(seconds_since_launch, *network));
#ifndef STRATA_TOOLS_NETEM_BANDWIDTH_SCHEDULE_H_
#define STRATA_TOOLS_NETEM_BANDWIDTH_SCHEDULE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/netem/emulated_network.h"
#include "tools/netem/schedule_change.h"

namespace strata {

struct RateChange {
  double at_seconds = 0;
  double bytes_per_second = 0;
  std::string rate;  // as written: "100mbit"
};
using BandwidthSchedule = std::vector<RateChange>;

// InvalidArgument naming the entry and the rule it breaks.
absl::StatusOr<BandwidthSchedule> ParseBandwidthSchedule(const std::string& text);

// A schedule entry's time from the launch: "0", "500ms", "60s", "1.5m" in
// seconds; nullopt for anything else.
std::optional<double> ParseScheduleOffset(const std::string& text);

// "1gbit@0,100mbit@60s": a schedule as a user writes it.
std::string FormatBandwidthSchedule(const BandwidthSchedule& schedule);

class ScheduledRates {
 public:
  // `schedule` is non-empty (as ParseBandwidthSchedule returns it); its
  // first entry is in force from the start.
  explicit ScheduledRates(BandwidthSchedule schedule) : schedule_(std::move(schedule)) {}
  // Makes every change due by `seconds` that has not been made, and adds
  // to `made` (when given) what each one did ("links now 100mbit") and
  // when it was due; the error of a change tc refuses.
  absl::Status Apply(double seconds, EmulatedNetwork& network,
                     std::vector<ScheduledChange>* made = nullptr);
  // How many entries are in force so far (1 at the start).
  size_t applied() const { return next_; }

 private:
  BandwidthSchedule schedule_;
  size_t next_ = 1;
};

}  // namespace strata

#endif  // STRATA_TOOLS_NETEM_BANDWIDTH_SCHEDULE_H_
