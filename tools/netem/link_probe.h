// LinkProbe: measures what an emulated link really carries, with a TCP
// stream between threads placed in two emulated hosts.
//
//   STRATA_ASSIGN_OR_RETURN(LinkMeasurement m, MeasureLink(*net, 0, 1, 1.0));
//   // m.bytes_per_second ~ net->options().bytes_per_second
#ifndef STRATA_TOOLS_NETEM_LINK_PROBE_H_
#define STRATA_TOOLS_NETEM_LINK_PROBE_H_

#include "absl/status/statusor.h"
#include "tools/netem/emulated_network.h"

namespace strata {

struct LinkMeasurement {
  double bytes_per_second = 0;  // bulk TCP goodput, from host `from` to host `to`
  double rtt_ms = 0;            // median round trip of a 1-byte ping-pong
  double bytes = 0;             // bytes moved in the timed window
};

// Streams from host `from` to host `to` for about `seconds` (after 20
// ping-pongs for the round trip). Fails, naming the step, when a socket
// cannot be set up or the transfer stalls for 10 s.
absl::StatusOr<LinkMeasurement> MeasureLink(const EmulatedNetwork& network, int from, int to,
                                            double seconds);

}  // namespace strata

#endif  // STRATA_TOOLS_NETEM_LINK_PROBE_H_
