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
// growth from the end of the warm-up to the end, and what it comes to per
// round. Fails when a client got an error or a server kept more than
// `max_bytes_per_round` per round (JudgeMemory).
#ifndef STRATA_TOOLS_BENCH_SOAK_BENCH_H_
#define STRATA_TOOLS_BENCH_SOAK_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

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
  // A server's memory kept per round, after the warm-up, that counts as a
  // leak (see JudgeMemory).
  double max_bytes_per_round = 4096;
  std::string json_out;
  std::string plot;  // PNG of p50/p99 latency and RSS over time ("" = none)
};

absl::Status RunSoak(const SoakOptions& options);

// One reading of every server's resident memory, `at` seconds into the run.
struct MemorySample {
  double at;
  std::vector<int64_t> rss;  // bytes, per server
};

// Whether a server leaks: the memory it kept per round, its RSS growth from
// the first reading at or after `warmup_end` to the last, over the rounds
// that ended in between (`round_ends`, seconds into the run). A working
// set that settles (pools that fill to the bursts they saw) grows by a few
// steps and stops, a fraction of a kilobyte per round over a run; a leak
// grows with the work. Sets `per_round` (per server); FailedPrecondition
// naming the first server above `max_bytes_per_round`, OK otherwise (and
// when no round ended after the warm-up).
absl::Status JudgeMemory(const std::vector<MemorySample>& memory,
                         const std::vector<double>& round_ends, double warmup_end,
                         double max_bytes_per_round, std::vector<double>* per_round);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_SOAK_BENCH_H_
