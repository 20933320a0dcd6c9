// `strata_bench ps`: push+pull goodput of the parameter server on loopback
// for 1, 2, 4 workers and 4-256 MiB tensors, and the latency of small pulls,
// beside the machine's memcpy bandwidth (the ceiling of any copy-based
// transport on this host). The transports (kv_contenders.h) are the
// contenders: alternated at each point, so that they see the same moments
// of a shared machine; `--curve` (tcp and curve) prices encryption.
#ifndef STRATA_TOOLS_BENCH_PS_BENCH_H_
#define STRATA_TOOLS_BENCH_PS_BENCH_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace strata::bench {

struct PsBenchOptions {
  std::vector<std::string> transports = {"tcp", "ipc", "shm"};  // kv_contenders.h
  std::vector<int> workers = {1, 2, 4};
  std::vector<int> sizes_mib = {4, 16, 64, 256};
  double seconds_per_point = 1.5;  // measured time per run at a (workers, size)
  int repeat = 3;                  // runs per transport and point
  int latency_pulls = 2000;        // timed pulls per transport
  std::string json_out, csv_out;
};

absl::Status RunPsBench(const PsBenchOptions& options);

}  // namespace strata::bench

#endif  // STRATA_TOOLS_BENCH_PS_BENCH_H_
