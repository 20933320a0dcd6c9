// `strata_bench soak`: a long run of many clients against a sharded
// parameter server, for what only time shows: errors that come once in a
// million requests, memory that grows, latency that drifts.
//
// Two strata_server processes (ASP, plain key-value mode, tcp on
// loopback, no shared memory) serve `clients` PsClients in this process,
// each pushing and pulling every key in a loop for `minutes`. Every
// second the servers' resident memory is read from /proc; every round's
// latency (push and pull of all keys) is kept. The report: per time
// window the rounds, p50 and p99 latency and each server's RSS; the RSS
// growth from the end of the warm-up to the end. Fails when a client got
// an error or a server's RSS grew by `max_rss_growth` or more.
#ifndef STRATA_TOOLS_BENCH_SOAK_BENCH_H_
#define STRATA_TOOLS_BENCH_SOAK_BENCH_H_

#include <string>

#include "absl/status/status.h"

namespace strata::bench {

struct SoakOptions {
  double minutes = 5;
  int clients = 16;
  int servers = 2;
  int keys = 8;
  int64_t key_elements = 64 * 1024;  // floats per key
  double warmup_fraction = 0.2;      // of the run, before memory counts
  int windows = 20;                  // rows of the report
  double max_rss_growth = 0.05;
  std::string json_out;
  std::string plot;  // PNG of p50/p99 latency and RSS over time ("" = none)
};

absl::Status RunSoak(const SoakOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_SOAK_BENCH_H_
