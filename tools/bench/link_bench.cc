#include "tools/bench/link_bench.h"

#include <cstdio>
#include <thread>
#include <vector>

#include "core/status.h"
#include "tools/netem/emulated_network.h"
#include "tools/netem/link_probe.h"

namespace strata::bench {

absl::Status RunLinkBench(const std::string& bandwidth, const std::string& latency, int senders) {
  if (senders < 1) return absl::InvalidArgumentError("link: --senders must be >= 1");
  EmulatedNetworkOptions o;
  o.hosts = senders + 1;
  STRATA_ASSIGN_OR_RETURN(o.bytes_per_second, ParseBandwidth(bandwidth));
  STRATA_ASSIGN_OR_RETURN(o.latency_ms, ParseLatency(latency));
  STRATA_ASSIGN_OR_RETURN(auto network, EmulatedNetwork::Create(o));
  std::printf("strata_bench link: %d emulated hosts, each link %s, %g ms one way\n", o.hosts,
              FormatBandwidth(o.bytes_per_second).c_str(), o.latency_ms);
  // Every sender streams to host 0 at once: what a server's link carries
  // when every worker pushes.
  std::vector<absl::StatusOr<LinkMeasurement>> results(senders);
  std::vector<std::thread> streams;
  for (int s = 0; s < senders; ++s) {
    streams.emplace_back([&, s] { results[s] = MeasureLink(*network, s + 1, 0, 2.0); });
  }
  for (std::thread& t : streams) t.join();
  double total = 0;
  for (int s = 0; s < senders; ++s) {
    STRATA_RETURN_IF_ERROR(results[s].status());
    total += results[s]->bytes_per_second;
    std::printf("TCP goodput %s -> %s: %.1f Mbit/s; round trip %.3f ms\n",
                network->host_address(s + 1).c_str(), network->host_address(0).c_str(),
                results[s]->bytes_per_second * 8 / 1e6, results[s]->rtt_ms);
  }
  std::printf("into %s: %.1f Mbit/s in all (%.1f%% of the set rate)\n",
              network->host_address(0).c_str(), total * 8 / 1e6,
              100.0 * total / o.bytes_per_second);
  return network->Destroy();
}

}  // namespace strata::bench
