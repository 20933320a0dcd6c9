// The "[traffic]" report a conv worker prints when it finishes (the
// launcher sums these): bytes exchanged with the servers and, in stanza
// mode, with its FC worker, and where its iterations went.
#ifndef STRATA_CONV_WORKERS_WORKER_TRAFFIC_H_
#define STRATA_CONV_WORKERS_WORKER_TRAFFIC_H_

#include <cstdint>

#include "core/net/fc_link.h"
#include "core/net/ps_client.h"
#include "core/net/traffic.h"

namespace strata {

// `link` is null in ps mode.
void PrintConvWorkerTraffic(int rank, int64_t steps, const PsClient& client, const FcLink* link,
                            const StepTimes& times);

}  // namespace strata

#endif  // STRATA_CONV_WORKERS_WORKER_TRAFFIC_H_
