#include "conv_workers/worker_traffic.h"

#include "absl/strings/str_cat.h"

namespace strata {

void PrintConvWorkerTraffic(int rank, int64_t steps, const PsClient& client, const FcLink* link,
                            const StepTimes& times) {
  TrafficReport traffic;
  traffic.process = absl::StrCat("worker ", rank);
  traffic.steps = steps;
  traffic.AddSent(PeerKind::kServer, client.bytes_sent());
  traffic.AddReceived(PeerKind::kServer, client.bytes_received());
  if (link != nullptr) {
    traffic.AddSent(PeerKind::kFc, link->bytes_sent());
    traffic.AddReceived(PeerKind::kFc, link->bytes_received());
  }
  traffic.times = times;
  traffic.Print();
}

}  // namespace strata
