// `strata_bench link`: builds a two-host emulated network and reports what
// its link really carries (TCP goodput, round trip) against what was set.
#ifndef STRATA_TOOLS_BENCH_LINK_BENCH_H_
#define STRATA_TOOLS_BENCH_LINK_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace strata::bench {

// With `senders` > 1, that many hosts stream to one at once (a server's
// link when every worker pushes) and the sum is reported too.
absl::Status RunLinkBench(const std::string& bandwidth, const std::string& latency, int senders);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_LINK_BENCH_H_
