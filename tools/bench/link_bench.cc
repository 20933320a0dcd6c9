#include "tools/bench/link_bench.h"

#include <cstdio>

#include "core/status.h"
#include "tools/netem/emulated_network.h"
#include "tools/netem/link_probe.h"

namespace strata::bench {

absl::Status RunLinkBench(const std::string& bandwidth, const std::string& latency) {
  EmulatedNetworkOptions o;
  o.hosts = 2;
  STRATA_ASSIGN_OR_RETURN(o.bytes_per_second, ParseBandwidth(bandwidth));
  STRATA_ASSIGN_OR_RETURN(o.latency_ms, ParseLatency(latency));
  STRATA_ASSIGN_OR_RETURN(auto network, EmulatedNetwork::Create(o));
  std::printf("strata_bench link: 2 emulated hosts, each link %s, %g ms one way\n",
              FormatBandwidth(o.bytes_per_second).c_str(), o.latency_ms);
  STRATA_ASSIGN_OR_RETURN(LinkMeasurement m, MeasureLink(*network, 0, 1, 2.0));
  std::printf("TCP goodput %s -> %s: %.1f Mbit/s (%.1f%% of the set rate); round trip %.3f ms\n",
              network->host_address(0).c_str(), network->host_address(1).c_str(),
              m.bytes_per_second * 8 / 1e6, 100.0 * m.bytes_per_second / o.bytes_per_second,
              m.rtt_ms);
  return network->Destroy();
}

}  // namespace strata::bench
