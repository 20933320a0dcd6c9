// ScheduledChange: what a live schedule (--bandwidth-schedule,
// --cpu-schedule) changed, and when the schedule said it was due, so that a
// record of it can be matched to its entry however late it was made or
// however often it was replayed (a restarted job gets the limits in force
// again).
#ifndef STRATA_TOOLS_NETEM_SCHEDULE_CHANGE_H_
#define STRATA_TOOLS_NETEM_SCHEDULE_CHANGE_H_

#include <string>

namespace strata {

struct ScheduledChange {
  std::string what;        // "links now 100mbit", "conv1 limited to 0.25 cores"
  double due_seconds = 0;  // the schedule's time for it, from the launch
};

}  // namespace strata

#endif  // STRATA_TOOLS_NETEM_SCHEDULE_CHANGE_H_
